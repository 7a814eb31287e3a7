"""langgraph-ctx: keep long-running LangGraph agents inside their context window."""
