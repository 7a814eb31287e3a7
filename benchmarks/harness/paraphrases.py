"""A paraphrase recall set (issue 34): personal and work facts, each asked in other words.

Each :class:`Paraphrase` is a fact a user told the agent, a question about it that a
person would ask later without repeating the fact's wording, and distractors: other
things the user said that share the question's words but do not answer it (what a
word-matching search ranks first). Written for this benchmark, not drawn from the
held-out set of issue 34.

The set checks itself when loaded (:func:`paraphrases`): at least :data:`LEAST` facts,
at least a third whose question shares no stemmed term with the fact (the stems every
index holds: :func:`~langgraph_ctx.retrieval.text.stems`), and every distractor sharing
a stemmed term with its question. ``shares`` says which kind a fact is, computed, not
labelled by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

from langgraph_ctx.retrieval.text import stems

LEAST = 60


@dataclass(frozen=True)
class Paraphrase:
    fact: str
    question: str
    distractors: tuple[str, ...]

    @property
    def shared(self) -> frozenset[str]:
        """The stems the question and the fact have in common (empty: meaning only)."""
        return frozenset(stems(self.fact)) & frozenset(stems(self.question))


_SET: list[tuple[str, str, tuple[str, ...]]] = [
    (
        "My preferred airline is Finnair.",
        "Which carrier do I like to fly with?",
        (
            "Which carrier handles the parcel delivery to the office?",
            "I like to fly a kite at the beach on Sundays.",
        ),
    ),
    (
        "My tax advisor is Priya Raman at Raman & Co.",
        "Who does my taxes?",
        (
            "The taxes on the new car were higher than expected.",
            "The tax office sent a letter about Friday.",
        ),
    ),
    (
        "We booked the Lindenhof restaurant for our anniversaries.",
        "Where is our anniversary dinner?",
        (
            "The dinner with the sales team is at the hotel.",
            "Our anniversary photos are on the drive.",
        ),
    ),
    (
        "I am allergic to penicillin.",
        "Which antibiotic must doctors avoid giving me?",
        (
            "Doctors recommend giving the cat a vitamin.",
            "Avoid the antibiotic aisle, it is restocked.",
        ),
    ),
    (
        "My daughter Elsa attends Brookside Primary.",
        "What school does my kid go to?",
        (
            "The school bus goes past the kid's park at eight.",
            "What school did the new intern go to?",
        ),
    ),
    (
        "The office Wi-Fi password is tangerine42.",
        "How do I get on the internet at work?",
        ("The internet at home is down again.", "How do I get a parking permit for work?"),
    ),
    (
        "My dentist appointment is on March 14 at 9:30.",
        "When do I see the tooth doctor?",
        ("I see the doctor about my knee next week.", "When do I renew the tooth insurance?"),
    ),
    (
        "Our landlord is Mr. Okafor; rent is due on the 3rd.",
        "Who owns the flat we live in?",
        ("Who owns the red bicycle in the hallway?", "We live close to the flat tyre repair shop."),
    ),
    (
        "I drive a 2019 Skoda Octavia estate.",
        "What car do I have?",
        ("The car park is full today.", "What car does the CFO have?"),
    ),
    (
        "My manager is Dana Whitfield.",
        "Who do I report to?",
        ("Report the broken printer to facilities.", "Who do I ask about the report template?"),
    ),
    (
        "The quarterly budget review happens every second Tuesday.",
        "When is the meeting about spending?",
        ("The meeting room on floor two is booked.", "Spending on travel went up last year."),
    ),
    (
        "My blood type is O negative.",
        "What kind of blood do I have?",
        ("The blood drive is on Friday.", "What kind of coffee do I have at home?"),
    ),
    (
        "I'm vegetarian and don't eat fish either.",
        "Any dietary restrictions for me?",
        ("The dietary guidelines were updated in May.", "Restrictions on parking apply this week."),
    ),
    (
        "My sister Mara lives in Rotterdam.",
        "Where is my sibling based?",
        ("The new lab is based in Utrecht.", "Where is the sibling rivalry article?"),
    ),
    (
        "I prefer aisle seats on long flights.",
        "Window or corridor seat when I travel?",
        ("The window seat in meeting room 3 is broken.", "I travel to Oslo next month."),
    ),
    (
        "Our team standup is at 09:15 on Zoom.",
        "When is the daily sync call?",
        ("The daily backup runs at midnight.", "Call the sync engineer if the job fails."),
    ),
    (
        "The cat's vet is Dr. Haugland at Paws Clinic.",
        "Who treats our pet?",
        ("Treats for the office party are in the kitchen.", "Our pet project is the chess bot."),
    ),
    (
        "My gym membership renews on 1 September.",
        "When does my fitness subscription come up again?",
        ("The fitness tracker needs charging.", "The subscription to the newspaper ends soon."),
    ),
    (
        "I'm learning Portuguese on Tuesdays with a tutor called Ines.",
        "Which language am I studying?",
        ("Which language does the parser support?", "Studying the logs took all afternoon."),
    ),
    (
        "My shoe size is 44 EU.",
        "What size shoes should you buy me?",
        ("The shoes by the door are not mine.", "What size is the new monitor?"),
    ),
    (
        "The backup server is in rack B7 in the Espoo data centre.",
        "Where does the backup machine live?",
        ("The backup policy is reviewed yearly.", "Where does the coffee machine live now?"),
    ),
    (
        "My wife's birthday is 12 July.",
        "When should I buy my partner a present?",
        ("Buy a present for the team lead's farewell.", "Our partner company is in Oslo."),
    ),
    (
        "We pay the electricity bill by direct debit from the joint account.",
        "How are the power charges settled?",
        ("The power bank charges slowly.", "The dispute was settled out of court."),
    ),
    (
        "Our son Theo is allergic to peanuts.",
        "Which nut is dangerous for Theo?",
        ("Theo starts school in August.", "The nut shop near the station closed."),
    ),
    (
        "My running route goes along the Toolonlahti bay.",
        "Where do I jog?",
        ("I jog past the harbour most mornings.", "Jog the printer's memory by restarting it."),
    ),
    (
        "The project deadline for Atlas is 30 June.",
        "When is Atlas due?",
        ("Atlas uses the new logging library.", "The library books are due back on Monday."),
    ),
    (
        "My favourite author is Tove Jansson.",
        "Which writer do I love most?",
        ("The writer of the report left the company.", "I love most of the new design."),
    ),
    (
        "I keep the spare house key under the blue flowerpot.",
        "Where's the extra key for home?",
        ("The key for the bike lock is lost.", "The extra chairs are at home."),
    ),
    (
        "The car insurance is with LahiTapiola, policy 88-231.",
        "Who covers the vehicle?",
        ("Who covers the night shift?", "The vehicle inspection is due in May."),
    ),
    (
        "My mother's phone number is 040 555 1234.",
        "How can I reach mum?",
        ("How can I reach the server room?", "Mum's the word on the surprise party."),
    ),
    (
        "Our wedding was at Suomenlinna in 2015.",
        "Where did we get married?",
        ("Where did we get the projector?", "The married couple in 4B moved out."),
    ),
    (
        "I take 50 mg of sertraline every morning.",
        "What medication am I on?",
        ("The medication cabinet is locked.", "What medication does the dog need?"),
    ),
    (
        "The company's VAT number is FI12345678.",
        "What's our tax ID?",
        ("The tax return is due in April.", "Our ID badges expire in December."),
    ),
    (
        "My bank is Nordea, branch at Aleksanterinkatu.",
        "Where do I keep my money?",
        ("Where do I keep the spare chairs?", "Money for the lunch is in the envelope."),
    ),
    (
        "I hate cilantro.",
        "Which herb do I dislike?",
        ("The herb garden needs watering.", "I dislike long meetings."),
    ),
    (
        "The kids' swimming lessons are on Saturday at 10.",
        "When do the children have the pool class?",
        ("The pool table is in the lounge.", "Children under five travel free."),
    ),
    (
        "Our Wi-Fi router at home is a Fritz!Box 7590.",
        "What modem do we have in the house?",
        ("The house party is on Saturday.", "What modem does the lab use?"),
    ),
    (
        "My passport expires on 2 February 2027.",
        "When does my travel document run out?",
        ("The travel policy document is on the wiki.", "We run out of milk every week."),
    ),
    (
        "The release freeze starts on 5 December.",
        "When do we stop shipping code?",
        ("Stop the shipping label printer before refilling it.", "Code review is mandatory."),
    ),
    (
        "I usually commute by the number 55 tram.",
        "How do I get to work?",
        ("How do I get a refund?", "Work on the roof starts Monday."),
    ),
    (
        "Our accountant sends invoices on the 25th of each month.",
        "When do invoices go out?",
        ("The invoices from the caterer were wrong.", "When do the lights go out at night?"),
    ),
    (
        "My desk is on the fourth floor, seat 4.12.",
        "Where do I sit in the office?",
        ("The office kitchen is being renovated.", "Where do I sit for the all-hands?"),
    ),
    (
        "The plumber, Jukka, fixed the boiler in October.",
        "Who repaired the heating?",
        ("The heating bill came in.", "Who repaired the fence?"),
    ),
    (
        "I'm colour-blind (red-green).",
        "Can I tell apart reds and greens on a chart?",
        ("The chart on slide four is wrong.", "The greens on the golf course are wet."),
    ),
    (
        "My annual leave is 25 days.",
        "How many vacation days do I get?",
        ("The vacation rental has three bedrooms.", "How many days does the audit take?"),
    ),
    (
        "Our cloud provider is Hetzner.",
        "Which hosting company do we use?",
        ("The hosting of the party is by Sales.", "Which company do we use for catering?"),
    ),
    (
        "The client Contoso prefers calls before noon.",
        "When is the best time to phone Contoso?",
        ("Contoso signed the renewal last week.", "The best time to visit is spring."),
    ),
    (
        "I bought the fridge from Gigantti with a five-year warranty.",
        "Where did the refrigerator come from?",
        ("Where did the new chairs come from?", "The refrigerator in the office smells."),
    ),
    (
        "My son's football practice is Wednesday at 17:00.",
        "When does the boy train for soccer?",
        ("The soccer final is on TV.", "The train to Turku leaves at noon."),
    ),
    (
        "Our CTO is Ahmed Siddiqui.",
        "Who is the head of technology?",
        ("Head of marketing is away.", "The technology budget was cut."),
    ),
    (
        "The spare laptop charger is in the second drawer.",
        "Where is the extra power cable for the notebook?",
        (
            "The notebook from the workshop is on my desk.",
            "The power cable for the projector is missing.",
        ),
    ),
    (
        "I'm lactose intolerant.",
        "Can I drink milk?",
        ("The milk in the fridge is expired.", "Can I drink tap water in Lisbon?"),
    ),
    (
        "Our home insurance covers water damage up to 50,000 euros.",
        "Is a flooded kitchen paid for by the policy?",
        ("The kitchen policy: wash your own cup.", "Is the training paid for by the company?"),
    ),
    (
        "My therapist is Dr. Lindqvist, sessions on Thursdays.",
        "Who do I talk to about my mental health?",
        ("Talk to IT about the health check alerts.", "Mental arithmetic is a good warm-up."),
    ),
    (
        "The production database runs PostgreSQL 16.",
        "Which version of Postgres is in prod?",
        ("Which version of the app is live?", "Postgres slides from the conference are online."),
    ),
    (
        "I moved to Tampere in 2021.",
        "How long have I lived in Tampere?",
        ("Tampere has a new tram line.", "How long have we had the projector?"),
    ),
    (
        "Our Friday team lunch is at Ravintola Savoy.",
        "Where do we eat together at the end of the week?",
        ("We eat at our desks most days.", "The end of the week report is late."),
    ),
    (
        "My reading glasses prescription is +1.75.",
        "How strong are my spectacles?",
        ("How strong is the coffee here?", "The spectacles display in the lobby is new."),
    ),
    (
        "The fire alarm test is every first Monday at 11.",
        "When will the smoke detector go off on purpose?",
        ("The smoke from the barbecue drifted in.", "The detector on floor three is broken."),
    ),
    (
        "My brother-in-law Kalle is an electrician.",
        "Who can fix wiring in the family?",
        ("Fix the wiring diagram in the docs.", "The family picnic is in June."),
    ),
    (
        "We chose the Scandic hotel for the Berlin offsite.",
        "Where are we staying for the Berlin offsite?",
        ("The Berlin office has a new receptionist.", "We are staying late for the release."),
    ),
    (
        "I booked physiotherapy for my knee on Friday.",
        "When is the appointment for my knee?",
        ("The knee brace is in the cupboard.", "The appointment with the auditor moved."),
    ),
    (
        "Our mortgage rate is fixed at 3.1% until 2028.",
        "What is the interest on the home loan?",
        ("The interest in the workshop was high.", "The loan of the projector ends Monday."),
    ),
]


def paraphrases() -> list[Paraphrase]:
    """The set, checked (see the module doc): a broken set fails loudly, not quietly."""
    out = [Paraphrase(f, q, d) for f, q, d in _SET]
    assert len(out) >= LEAST, f"{len(out)} facts, fewer than {LEAST}"
    unshared = [p for p in out if not p.shared]
    assert 3 * len(unshared) >= len(out), f"only {len(unshared)} of {len(out)} share no stem"
    for p in out:
        q = set(stems(p.question))
        assert p.distractors, p.fact
        for d in p.distractors:
            assert q & set(stems(d)), f"distractor shares no word with {p.question!r}: {d!r}"
    assert len({p.fact for p in out}) == len(out), "a fact twice"
    return out
