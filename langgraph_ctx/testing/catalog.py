"""A catalog of realistic tools (60 by default) for tests and tool-budget benchmarks.

Each tool has a real JSON schema (typed, described arguments) of the size
real integrations have, and returns a small deterministic JSON result.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field, create_model

_DOMAINS = {
    "orders": ("order", "customer orders: status, items, totals and delivery dates"),
    "billing": ("invoice", "invoices, payments, credit notes and overdue balances"),
    "shipping": ("shipment", "shipments, carriers, tracking events and customs status"),
    "crm": ("contact", "customer contacts, accounts, notes and ownership"),
    "inventory": ("sku", "stock levels, warehouses, reorder points and reservations"),
    "hr": ("employee", "employees, teams, leave requests and payroll periods"),
    "analytics": ("report", "dashboards, metrics, cohorts and scheduled reports"),
    "support": ("ticket", "support tickets, priorities, SLAs and escalations"),
    "calendar": ("event", "meetings, rooms, attendees and availability"),
    "documents": ("document", "contracts, policies, versions and signatures"),
}
_VERBS = (
    ("get", "Fetch one {noun} by id with all its fields"),
    ("search", "Search {noun}s by free text and filters"),
    ("create", "Create a new {noun}"),
    ("update", "Update fields of an existing {noun}"),
    ("list_recent", "List the most recent {noun}s, newest first"),
    ("export", "Export {noun}s matching filters to CSV"),
)


def _schema(domain: str, noun: str, verb: str) -> type[BaseModel]:
    fields: dict[str, Any] = {
        f"{noun}_id": (
            str,
            Field(description=f"Identifier of the {noun}, e.g. {noun[:3].upper()}-1042"),
        ),
    }
    if verb in ("search", "list_recent", "export"):
        fields["query"] = (str, Field(default="", description="Free-text search terms"))
        fields["limit"] = (int, Field(default=20, ge=1, le=500, description="Maximum results"))
        fields["since"] = (str, Field(default="", description="ISO date: only items after it"))
    if verb in ("create", "update"):
        fields["fields"] = (dict[str, str], Field(description=f"Field values of the {noun}"))
        fields["notify"] = (bool, Field(default=False, description="Notify the owner by e-mail"))
    return create_model(f"{domain.title()}{verb.title().replace('_', '')}Args", **fields)


def catalog_tools(n: int = 60) -> list[BaseTool]:
    """``n`` realistic tools (at most 60) named ``<verb>_<domain>``, e.g. ``get_orders``."""
    tools: list[BaseTool] = []
    for domain, (noun, about) in _DOMAINS.items():
        for verb, doc in _VERBS:
            if len(tools) == n:
                return tools
            name = f"{verb}_{domain}"

            def run(_name: str = name, **kwargs: Any) -> str:
                return json.dumps({"tool": _name, "ok": True, "args": kwargs}, sort_keys=True)

            description = f"{doc.format(noun=noun)}. Domain: {about}."
            tools.append(
                StructuredTool.from_function(
                    run, name=name, description=description, args_schema=_schema(domain, noun, verb)
                )
            )
    return tools
