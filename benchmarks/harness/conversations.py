"""Multi-session conversations with a person, generated from a seed: what a chat
assistant with long memory is asked about.

A conversation is several dated sessions of small talk (plans, cooking, work,
books, errands). Now and then the user states a fact once, in passing; sessions
later a question asks about it in other words, so that the question shares few
words with the sentence that answers it. Three kinds of question:

- ``single``: one fact ("my new dentist is Dr. Varga" -> "who looks after my
  teeth these days?");
- ``temporal``: a date: one stated outright ("the wedding is on 14 September
  2025"), or the session's own date ("today was my first day at Brightline"
  in the session of Tuesday, 14 May 2024, asked as "what was the date of my
  first day at Brightline?");
- ``multi-hop``: two facts from different sessions that only together answer
  ("my cousin Ingrid works at Kestrel Dynamics" ... "Kestrel Dynamics moved its
  offices to Tallinn" -> "which city does my cousin work in now?").

A question is *kept* when every group of its :attr:`Question.needs` has one
spelling in the prompt the model answers it from (case-insensitive): the answer
itself, and for a date or a second hop, a word that only the stating message has
(so a date found in another message of that session, or a city without the
link to the cousin, does not count). No needed string occurs in the question,
nor anywhere in the conversation but in the message that states it: the filler
draws from other words (no names, cities, dates or amounts at all), and every
fact value is drawn once.

Everything comes from one ``random.Random(seed)``: a seed names a conversation.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_FIRST = _words(
    "Ingrid Tomasz Aiko Rafael Fatima Kwame Elena Marcus Sofia Lars Priya Daniel Mei "
    "Oskar Noor Mateo Hana Idris Lucia Bram Yara Emeka Signe Paolo Zofia Tariq Ines "
    "Ravi Greta Joon"
)
_LAST = _words(
    "Varga Okafor Lindqvist Moreau Castillo Brennan Kowalski Fischer Adeyemi Sorensen "
    "Tanaka Delgado Whitfield Petrov Quinlan Ferreira Szabo Halvorsen Nakamura "
    "Marchetti Oyelaran"
)
_CITIES = _words(
    "Tallinn Porto Ljubljana Valparaiso Kraków Bergen Ghent Tbilisi Cork Bologna "
    "Aarhus Montevideo Tartu Salzburg Halifax Dunedin Trieste Utrecht Cusco Nagasaki"
)
_ORGS = (
    "Kestrel Dynamics",
    "Brightline Analytics",
    "Harbor & Finch",
    "Quillon Labs",
    "Mossgate Studios",
    "Tidewater Robotics",
    "Larkspur Health",
    "Copperleaf Energy",
    "Northvale Press",
    "Juniper Row Architects",
)
_PETS = _words("Miso Biscuit Pepper Marzipan Noodle Waffles Ziggy Clementine Tofu Pickles")
_ANIMALS = ("puppy", "kitten", "rabbit", "parrot", "tortoise")
_LANGUAGES = ("Portuguese", "Icelandic", "Korean", "Swahili", "Hungarian", "Tagalog", "Welsh")
_BOOKS = (
    "The Salt Orchard",
    "A Map of Quiet Rivers",
    "The Glassblower's Daughter",
    "Nine Winters North",
    "The Lantern Keeper",
    "Echoes Under Ice",
)
_RELATIVES = ("cousin", "brother", "sister", "aunt", "uncle", "niece", "nephew")
_FRIENDS = (
    "old school friend",
    "climbing partner",
    "former flatmate",
    "neighbour",
    "running buddy",
    "godmother",
    "brother-in-law",
    "oldest friend",
)
_SINGLE = (  # (value pool, statement, the question in other words); each used once
    ("last", "I finally found a new dentist, Dr. {v}, and the first check-up went fine.",
     "Remind me, who is the doctor that looks after my teeth these days?"),
    ("last", "The vet who treats our animals now is Dr. {v}; very calm with them.",
     "What is the name of the animal doctor we take our pets to?"),
    ("last", "My tax paperwork is handled by an accountant called Mr. {v} from now on.",
     "Who sorts out my returns for the revenue office?"),
    ("language", "I signed up for evening {v} lessons; the first class is next week.",
     "Which foreign tongue did I enrol to learn in night classes?"),
    ("code", "Note to self: the door code at the lake cabin is {v}.",
     "What do I type on the keypad to get into the holiday cottage by the water?"),
    ("code", "The padlock on my storage unit opens with {v}.",
     "What is the combination for the place where I keep my extra belongings?"),
    ("code", "My booking reference for the train trip is {v}.",
     "What is the confirmation number for my rail journey?"),
    ("code", "We changed the home wifi password to {v}.",
     "What is the key for our internet network at the house?"),
    ("amount", "The contractor quoted {v} for redoing the bathroom pipes.",
     "How much did the tradesman want to fix the plumbing in the washroom?"),
    ("amount", "The garage said fixing the gearbox will cost {v}.",
     "What price did the mechanics give me for the transmission work?"),
    ("amount", "The landlord is raising the rent to {v} a month.",
     "How much will I be paying for the flat each month?"),
    ("book", "Our book club picked '{v}' for next month.",
     "Which novel is my reading group going through?"),
    ("book", "For my father's birthday I'm giving him '{v}'.",
     "Which title did I pick as a present for my dad?"),
    ("city", "We've booked our summer holiday in {v}.",
     "Where are we going for our vacation in the warm months?"),
    # Plain words, no entity: what a summarizer keeps only if it judges them worth it.
    ("milk", "I've switched to {v} in my coffee, the regular kind upsets my stomach.",
     "What do I put in my morning brew now instead of dairy?"),
    ("hobby", "Lately the thing that really helps me unwind is {v}.",
     "Which pastime have I taken up to relax?"),
    ("allergy", "The doctor says I'm allergic to {v}, so that's off the menu now.",
     "Which food do I have to steer clear of for medical reasons?"),
    ("instrument", "I've started learning the {v} with an online course.",
     "What musical instrument am I teaching myself?"),
    ("vehicle", "We finally replaced the old car with a {v}.",
     "What kind of vehicle do we get around in now?"),
    ("plant", "The only plant that survived the winter on the balcony is the {v}.",
     "Which of my potted greens made it through the cold months?"),
)  # fmt: skip
_PLAIN = {
    "milk": ("oat milk", "almond milk", "soy milk"),
    "hobby": ("pottery", "bouldering", "birdwatching", "calligraphy", "beekeeping"),
    "allergy": ("shellfish", "hazelnuts", "sesame", "kiwi"),
    "instrument": ("cello", "ukulele", "clarinet", "harmonica", "banjo"),
    "vehicle": ("campervan", "hatchback", "minivan", "pickup truck"),
    "plant": ("rosemary", "lavender", "geranium", "fuchsia"),
}
_EVENTS = (  # (statement, question): a date stated outright, one per relative
    ("Big news: my {rel}'s wedding will be on {d}.", "On what day is my {rel} getting married?"),
    ("My {rel}'s baby is due on {d}.", "When is my {rel} expecting the little one?"),
    ("My {rel} is moving abroad on {d}, so we're planning a farewell.",
     "When does my {rel} emigrate?"),
)  # fmt: skip
_TODAY = (  # (statement, question, a word only the statement has): the session's date
    ("Today was my first day as a consultant at {org}, and everyone was welcoming.",
     "What was the date when I started working at {org}?", "first day as a consultant"),
    ("I signed the contract with {org} today, after weeks of back and forth.",
     "On which date did the deal with {org} get finalised?", "signed the contract"),
    ("I had my interview at {org} this morning and I think it went well.",
     "When was I interviewed by {org}?", "interview at"),
)  # fmt: skip
_MONTHS = _words(
    "January February March April May June July August September October November December"
)

# Small talk. Half of it carries details of its own (people, places, amounts, days),
# so that a fact is not the only specific sentence around, as in a real chat; they
# come from pools no fact draws from, so nothing a question needs is found by accident.
# Parts combine into 10^4+ sentences.
_OTHER_PEOPLE = _words(
    "Bernadette Cosmo Dorothea Florian Gwendolyn Horatio Isidora Jasper Leopold "
    "Magdalena Nikolai Ottilie Percival Rosalind Sebastian Theodora Valentin Wilhelmina"
)
_OTHER_PLACES = _words(
    "Marseille Rotterdam Edinburgh Seville Gdansk Antwerp Lucerne Heidelberg Palermo "
    "Vilnius Innsbruck Galway Bruges Granada Lyon Turin"
)
_SHOPS = ("the corner bakery", "the garden centre", "the hardware store", "the bookshop",
          "the pharmacy", "the flea market")  # fmt: skip
_WEEKDAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
_OPENERS = (
    "Hi again!",
    "Hello, it's me.",
    "Morning!",
    "Hey, got a minute?",
    "Back again with a few things.",
)
_TOPICS = {
    "cooking": (
        "I tried a new stew recipe with smoked paprika and too much garlic",
        "the sourdough starter finally bubbled after a week of neglect",
        "I keep burning the onions when I try to caramelize them slowly",
        "we made dumplings from scratch and half of them fell apart",
        "the lentil soup came out bland even with extra cumin",
    ),
    "work": (
        "the quarterly review dragged on for most of the afternoon",
        "my manager wants the slides reorganized yet again",
        "the team is arguing about which ticket tracker to switch to",
        "I spent the morning untangling a spreadsheet nobody documented",
        "there was another meeting that could have been an email",
    ),
    "home": (
        "the kitchen tap has started dripping again",
        "I finally sorted the hallway cupboard and found old postcards",
        "the neighbours are renovating and the drilling starts early",
        "we repainted the spare room a pale green colour",
        "the balcony plants are not coping well with the wind",
    ),
    "health": (
        "I have been trying to walk more in the evenings",
        "my back is stiff from the new office chair",
        "I am sleeping better since I stopped looking at my phone in bed",
        "the yoga class was harder than I expected",
        "I am trying to drink more water and less coffee",
    ),
    "reading": (
        "the mystery novel I started has far too many characters",
        "I gave up on the history book halfway through",
        "a friend lent me a collection of short stories about the sea",
        "I prefer reading on paper even though the e-reader is lighter",
        "the poetry anthology is slow going but rewarding",
    ),
    "weekend": (
        "we went for a long hike and got caught in the rain",
        "the farmers market had the first strawberries of the season",
        "I spent the whole afternoon fixing my bicycle",
        "we watched an old film and argued about the ending",
        "the weekend went by far too quickly again",
    ),
}
_ASIDES = (
    "Anyway, that's been on my mind.",
    "Not a big deal, just venting a little.",
    "I'm not sure what to make of it yet.",
    "Maybe you have some thoughts on that.",
    "It has been that kind of week.",
    "I'll see how it goes over the next days.",
)
_ASKS = (
    "Any tips for making that go better?",
    "What would you suggest I try next?",
    "How would you approach it?",
    "Does that sound normal to you?",
    "Could you help me think it through?",
)
_ADVICE = (
    "It often helps to break the problem into smaller steps and tackle the easiest first.",
    "A little patience goes a long way here; small changes add up over time.",
    "You could try changing one thing at a time so you can see what actually helps.",
    "Writing down what happened each time can reveal a pattern you would otherwise miss.",
    "Sometimes asking someone who has done it before saves a lot of trial and error.",
    "Setting a short, regular routine tends to work better than occasional big efforts.",
    "It is worth being kind to yourself; most people struggle with exactly this.",
    "Consider what a good enough outcome would look like rather than a perfect one.",
)
_ACKS = (
    "Thanks for telling me, I'll keep that in mind.",
    "Good to know, noted.",
    "That's lovely to hear.",
    "Got it, thanks for sharing.",
)


@dataclass(frozen=True)
class Question:
    """A question about earlier facts, and what its answer needs in the prompt."""

    id: str
    kind: str
    """``"single"``, ``"temporal"`` or ``"multi-hop"``."""
    text: str
    needs: tuple[tuple[str, ...], ...]
    """Every group must be in the prompt, any one spelling of it."""
    stated: tuple[int, ...]
    """The turns whose user message states what it needs."""


@dataclass(frozen=True)
class ConversationTurn:
    index: int
    session: int
    user: str
    reply: str
    question: Question | None = None


@dataclass(frozen=True)
class Conversation:
    seed: int
    turns: tuple[ConversationTurn, ...]
    dates: tuple[date, ...]
    """Each session's date."""

    @property
    def questions(self) -> list[Question]:
        return [t.question for t in self.turns if t.question is not None]


def _dates(d: date) -> tuple[str, ...]:
    """The spellings a date is accepted in."""
    month = _MONTHS[d.month - 1]
    return (f"{d.day} {month} {d.year}", f"{month} {d.day}, {d.year}", d.isoformat())


def _spoken(d: date) -> str:
    return f"{d:%A}, {d.day} {_MONTHS[d.month - 1]} {d.year}"


@dataclass
class _Pending:
    """A fact stated, waiting for its question (or for its second hop)."""

    question: str
    kind: str
    needs: tuple[tuple[str, ...], ...]
    stated: tuple[int, ...]
    session: int


class _Builder:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.pools = {
            "first": self._shuffled(_FIRST),
            "last": self._shuffled(_LAST),
            "city": self._shuffled(_CITIES),
            "org": self._shuffled(_ORGS),
            "pet": self._shuffled(_PETS),
            "language": self._shuffled(_LANGUAGES),
            "book": self._shuffled(_BOOKS),
            "friend": self._shuffled(_FRIENDS),
            **{k: self._shuffled(v) for k, v in _PLAIN.items()},
        }
        self.used: set[tuple[str, str]] = set()
        self.used_templates: set[str] = set()
        self.codes: set[str] = set()

    def _shuffled(self, items: tuple[str, ...] | list[str]) -> list[str]:
        out = list(items)
        self.rng.shuffle(out)
        return out

    def draw(self, pool: str) -> str | None:
        """A value never drawn before (each fact value occurs once), or ``None``."""
        values = self.pools.get(pool, [])
        return values.pop() if values else None

    def relative(self, kind: str) -> str | None:
        """A relative not yet used by ``kind``: "my sister's wedding" names one wedding."""
        left = [x for x in _RELATIVES if (kind, x) not in self.used]
        if not left:
            return None
        rel = self.rng.choice(left)
        self.used.add((kind, rel))
        return rel

    def code(self) -> str:
        while True:
            code = f"{self.rng.choice('BCDFGHJKMNPQRSTVWXZ')}{self.rng.randint(1000, 9999)}"
            code += self.rng.choice("BCDFGHJKMNPQRSTVWXZ")
            if code not in self.codes:
                self.codes.add(code)
                return code

    def chat(self) -> tuple[str, str]:
        """A small-talk exchange: the user's message and the assistant's reply."""
        r = self.rng
        topic = r.choice(list(_TOPICS))
        first, second = r.sample(_TOPICS[topic], 2)
        detail = "".join(f" {self.detail()}" for _ in range(r.choice((0, 1, 1, 2))))
        user = f"So, {first}, and {second}.{detail} {r.choice(_ASIDES)} {r.choice(_ASKS)}"
        reply = " ".join(r.sample(_ADVICE, 3))
        return user, reply

    def detail(self) -> str:
        """A specific sentence no question asks about."""
        r = self.rng
        who, where = r.choice(_OTHER_PEOPLE), r.choice(_OTHER_PLACES)
        return r.choice(
            (
                f"I had lunch with {who} from the office, who just got back from {where}.",
                f"The train from {where} was {r.randint(12, 95)} minutes late again.",
                f"I spent €{r.randint(14, 260)}.{r.randint(10, 99)} at {r.choice(_SHOPS)}.",
                f"{who} wants to meet on {r.choice(_WEEKDAYS)} at {r.randint(2, 9)} pm.",
                f"{who} keeps sending me photos from {where}.",
                f"My old flat in {where} had room {r.randint(100, 999)} on the top floor.",
            )
        )

    def fact(self, turn: int, session: int, day: date) -> tuple[str, _Pending] | None:
        """A statement (a sentence the user says) and the question it opens."""
        r = self.rng
        kind = r.choice(("single", "single", "single", "relative", "date", "today"))
        if kind == "single":
            left = [t for t in _SINGLE if t[1] not in self.used_templates]
            if not left:
                return None
            pool, said, ask = r.choice(left)
            value = self.code() if pool == "code" else self.amount() if pool == "amount" else None
            value = value or self.draw(pool)
            if value is None:
                return None
            self.used_templates.add(said)
            return said.format(v=value), _Pending(ask, "single", ((value,),), (turn,), session)
        if kind == "relative":
            rel, pet = self.relative("pet"), self.draw("pet")
            if rel is None or pet is None:
                return None
            said = f"My {rel} brought home a {r.choice(_ANIMALS)} and decided to call it {pet}."
            ask = f"What did my {rel} name the new animal in the family?"
            return said, _Pending(ask, "single", ((pet,),), (turn,), session)
        if kind == "date":
            event = r.choice(_EVENTS)
            rel = self.relative(event[0])
            if rel is None:
                return None
            spelled = _dates(day + timedelta(days=r.randint(40, 300)))
            said = event[0].format(rel=rel, d=spelled[0])
            ask = event[1].format(rel=rel)
            return said, _Pending(ask, "temporal", (spelled,), (turn,), session)
        left = [t for t in _TODAY if t[0] not in self.used_templates]
        org = self.draw("org")
        if not left or org is None:
            return None
        said, ask, evidence = r.choice(left)
        self.used_templates.add(said)
        needs = (_dates(day), (evidence.format(org=org),))
        return said.format(org=org), _Pending(
            ask.format(org=org), "temporal", needs, (turn,), session
        )

    def amount(self) -> str:
        while True:
            amount = f"${self.rng.randint(2, 29)},{self.rng.randint(100, 999)}"
            if amount not in self.codes:
                self.codes.add(amount)
                return amount

    def hop(self, turn: int, session: int) -> tuple[str, _Pending] | None:
        """The first fact of a two-hop question; its second comes sessions later."""
        first, org = self.draw("first"), self.draw("org")
        who = self.draw("friend")
        if first is None or org is None or who is None:
            return None
        said = f"My {who} {first} just took a job at {org}."
        ask = f"In which city does my {who} work now?"
        # needs[0] is the company until the second hop puts the city there.
        return said, _Pending(ask, "multi-hop", ((org,), (first,)), (turn,), session)

    def second_hop(self, pending: _Pending, turn: int, session: int) -> tuple[str, _Pending] | None:
        city = self.draw("city")
        if city is None:
            return None
        org = pending.needs[0][0]
        said = f"Apparently {org} has moved all of its offices to {city}."
        needs = ((city,), pending.needs[1])
        return said, _Pending(
            pending.question, "multi-hop", needs, (*pending.stated, turn), session
        )


def _stated(
    b: _Builder, hops: list[_Pending], turn: int, session: int, day: date
) -> tuple[str | None, _Pending | None]:
    """What the user states at this turn, if anything: a second hop whose first was
    said in an earlier session, a new first hop, or a fact of its own."""
    r = b.rng
    ready = [h for h in hops if h.session < session]
    found: tuple[str, _Pending] | None = None
    if ready and r.random() < 0.5:
        hops.remove(ready[0])
        found = b.second_hop(ready[0], turn, session)
    elif r.random() < 0.25:
        found = b.hop(turn, session)
    else:
        found = b.fact(turn, session, day)
    return found if found is not None else (None, None)


def generate_conversation(
    sessions: int = 10,
    *,
    seed: int = 0,
    turns_per_session: tuple[int, int] = (12, 18),
    fact_rate: float = 0.3,
    gap: int = 2,
) -> Conversation:
    """A conversation of ``sessions`` dated sessions; the same seed gives the same one.

    ``fact_rate``: the share of turns that state a fact; ``gap``: how many sessions
    later (at least) a fact is asked about. Questions come at the start of a
    session, one per turn, before its small talk, as a user picking up a thread.
    """
    if sessions < 1 or not 0 <= fact_rate <= 1 or gap < 1:
        raise ValueError("need sessions >= 1, fact_rate within [0, 1] and gap >= 1")
    lo, hi = turns_per_session
    if not 1 <= lo <= hi:
        raise ValueError("turns_per_session must be (lo, hi) with 1 <= lo <= hi")
    b = _Builder(seed)
    r = b.rng
    day = date(2024, 1, 8) + timedelta(days=r.randint(0, 60))
    turns: list[ConversationTurn] = []
    dates: list[date] = []
    waiting: list[_Pending] = []  # asked once `gap` sessions have passed
    hops: list[_Pending] = []  # first hops, waiting for their second
    asked = 0
    for s in range(sessions):
        dates.append(day)
        opener = f"(New conversation, {_spoken(day)}.) {r.choice(_OPENERS)}"
        due = [p for p in waiting if p.session <= s - gap]
        waiting = [p for p in waiting if p.session > s - gap]
        r.shuffle(due)
        first = True
        for p in due:
            asked += 1
            q = Question(f"q{asked}", p.kind, p.question, p.needs, p.stated)
            user = f"{opener} {q.text}" if first else q.text
            first = False
            turns.append(ConversationTurn(len(turns), s, user, r.choice(_ADVICE), q))
        for _ in range(r.randint(lo, hi)):
            i = len(turns)
            user, reply = b.chat()
            said: str | None = None
            if r.random() < fact_rate:
                said, pending = _stated(b, hops, i, s, day)
                if pending is not None and pending.kind == "multi-hop" and len(pending.stated) == 1:
                    hops.append(pending)
                elif pending is not None:
                    waiting.append(pending)
            if said is not None:  # anywhere in the message: a summary must not keep it by place
                parts = user.split(". ")
                parts.insert(r.randint(0, len(parts) - 1), said.rstrip("."))
                user = ". ".join(parts)
                reply = f"{r.choice(_ACKS)} {reply}"
            if first:
                user = f"{opener} {user}"
                first = False
            turns.append(ConversationTurn(i, s, user, reply))
        day += timedelta(days=r.randint(3, 21))
    return Conversation(seed, tuple(turns), tuple(dates))
