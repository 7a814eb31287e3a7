"""Common English words, for telling the ordinary from the specific without a model.

Two heuristics need them: a capitalized word at the start of a sentence is
taken for a name only if it is *not* an ordinary word ("Customer asked" vs
"Dealogic has"), and the extractive summarizer values a rare word ("matcha",
"metformin") above a common one ("really", "thing") when it decides what to
keep. The list is general (function words, and the verbs, adverbs, adjectives
and nouns of everyday, business and software talk); it is written by hand, not
derived from any evaluation data. Inflections are matched by :func:`is_common`.
"""

from __future__ import annotations

_WORDS = """
a able about above absolutely accept access according account across act action actually add
added address admit advance advice affect after afternoon again against age ago agree ahead all
allow almost alone along already alright also although always am amazing among amount an and
another answer any anybody anyone anything anyway anywhere apart app appear apply appreciate
approach appropriate approve are area around arrive as ask assume at attention available avoid
away awesome back bad balance base basic basically be beautiful became because become been
before begin behind being believe below best better between beyond big bit body both bottom box
break bring build business busy but buy by call came can cannot care careful carry case cause
certain certainly chance change charge check choice choose clear clearly close come comfortable
coming common company complete completely concern confirm consider contact continue control
cool correct cost could couple course cover create current currently customer cut data date day
days deal dear decide decision deep definitely delay deliver depend deploy describe detail
details did different difficult direct directly do does doing done down due during each early
easily easy either else email end enjoy enough ensure entire especially even evening event
events ever every everybody everyone everything everywhere exactly example excellent except
excited exciting expect experience explain extra face fact fair fairly fall family far fast
feel feeling felt few figure fill final finally find fine finish first fit fix follow following
for forget form forward found free friend friendly from front full fully fun further future
gave get getting give given glad go goes going gone good got great group grow guess guy guys
had half handle happen happened happy hard has have having he hear heard hello help helpful her
here hey hi high him his hit hold home honest honestly hope hopefully hour hours house how
however huge idea if important in include including increase indeed information instead
interest interested interesting into is issue issues it item items its itself job join just
keep kind knew know known large last late lately later least leave less let level life like
likely line list listen little live long look looking lot lots love low made main major make
making man manage many matter may maybe me mean means meet mention mentioned mind minute
minutes miss moment money month months more morning most mostly move much must my myself name
near nearly need needed needs never new next nice night no nobody none normal not note nothing
notice now number of off offer often oh ok okay old on once one only onto open option or order
other others otherwise our out over own part particular particularly pay people perfect perhaps
person personal pick place plan plans play please plus point possible possibly post pretty
price probably problem problems process product project provide pull put question questions
quick quickly quite rather read ready real really reason receive recent recently recommend
record regarding related remember reply request require right role run said same save saw say
says second see seem seemed seems seen self send sense sent serious service set several share
she short should show side simple simply since single small so some somebody someone something
sometimes somewhat soon sorry sort sound sounds speak special specific spend start started
state still stop story straight stuff such suggest super support suppose sure system take taken
talk task team tell terms than thank thanks that the their them themselves then there these
they thing things think this those though thought through time times to today together told too
took top total totally toward towards track true truly try trying turn type under understand
unfortunately unless until up update upon us use used useful user using usual usually value
various very via view wait want wanted wants was watch way ways we week weeks welcome well went
were what whatever when where whether which while who whole whom whose why will willing wish
with within without wonder wonderful word work worked working works world worry would wow write
wrong year years yes yet you your yours yourself across actual additional almost alongside
amazing anyhow appreciated around aside assist attempt aware awful bunch certainly chat checked
clarify comment comments compare concerned confirmed considering content context couldn't
curious currently decent describe difference discuss discussed doesn't don't double effort else
entirely equally exact expected extremely familiar feedback fix fixed folks frankly
fundamentally generally gotten greatly handled haven't helped highly honestly hoping i'd i'll
i'm i've idea ideally imagine immediately important impressed incredibly instance isn't it's
kinda kindly largely let's literally lovely main mainly maybe meant mentioned mere merely
mostly nearly necessarily neither nevertheless nor obviously okay overall partly personally
plenty practically precisely presumably previously primarily properly quickly quite rarely
readily reasonably recall regard regardless regularly relatively remind seriously shall
significantly similar similarly slightly somehow somewhere soon specifically strongly sure
surely that's there's they're thoroughly though thus truly typically ultimately unclear
understandable usually vaguely wasn't we're we've weird what's whenever wherever won't wouldn't
you'd you'll you're you've meanwhile needless truth besides nonetheless moreover furthermore
hence therefore lastly firstly secondly naturally sadly luckily fortunately ironically
interestingly anyways afford agent amount answer apply approval arrange arrival assistance
attach attachment bill billing book booking budget bug cancel cancellation card cart cash
channel charge chart choice city class client code cost country coupon course credit dashboard
database deadline default delivery department design device discount document download draft
edit employee error estimate fee file filter flight form function goal guide history income
input invoice key language layout library link location login manager market meeting member
message method model network office online output owner package page password payment period
phone plan platform policy portal price profile program purchase quality quote rate receipt
refund report request reservation result return review room rule sale schedule screen search
section security seller server session setting settings shipping shop size source staff step
store subscription summary support table teacher test text ticket tool trip unit upgrade upload
version website window age air animal area art baby bed bedroom blue body book boy brother
building car center child children city class coffee college community computer country couple
cup dad daughter door dinner doctor dog eye face father feet field fire floor food friend
friends game girl glass government green guy hair hand head health heart hospital hotel husband
kid kids kitchen lady land law light lunch mom money mother music news night nurse office paper
parent parents park party phone picture place plant power president red road room school
science sea shop sister son space sport street student study table teacher television town tree
wall water weather white wife window woman women word world ability absence academic accident
accompany achieve achievement acknowledge acquire active activity actor adapt adjust
administration admire adopt adult advantage adventure advertise affair afraid agency agenda
aggressive agreement aim alarm alive alternative amazing ambition analysis analyze ancient
anger angle angry announce annual anxiety anxious apartment apparent apparently appeal
appearance application appointment appreciation arrangement article artist aside aspect assess
assessment asset assign associate assumption atmosphere attend attitude attract attractive
audience author authority automatic automatically average award background balance ball band
bank bar barely battle bear beat beauty bedroom beginning behavior belief belong benefit bet
bigger biggest birth blame blank block blood board boat bold bond bone bonus boost born borrow
boss bother bound brain branch brand brave bread breakfast breath bridge brief bright brilliant
broad broken brought brown budget burden burn button cabinet calm camera camp campaign capable
capacity capital captain capture career careful cast casual category caught celebrate
celebration central century ceremony chain chair chairman challenge champion character
characteristic charity cheap chest chief chosen church circle circumstance citizen civil claim
classic clean climb clock clothes cloud club coach coast collect collection combination combine
comfort command commercial commission commitment committee communicate communication comparison
compete competition competitive complain complaint complex complicated component concept
conclusion condition conduct conference confidence confident conflict confused connect
connection conscious consequence conservative considerable consist constant constantly
construct construction consumer contain contemporary contest contract contrast contribute
contribution convenient conversation convert convince cook cooking cookie copy core corner
corporate count counter county courage court cousin crazy cream creative creature crew crime
crisis criteria critical criticism crowd crucial cultural culture cure curious custom cycle
daily damage dance danger dangerous dark deadline dealing death debate debt decade decent
declare decline decrease dedicate defend defense define definition degree delight demand
demonstrate deny depth desk despite destroy determine develop development diet differ digital
dimension dinner direction director dirty disappear discipline discover discovery disease dish
display distance distinct distribution district divide division domestic dominant dozen drama
dramatic draw drawing dream dress drink drive driver drop drug dry duty eager earn earth ease
east economic economy edge education effect effective efficient eight elderly elect election
electric element elsewhere embrace emerge emergency emotion emotional emphasis employ
employment empty encounter encourage endless enemy energy engage engine engineer engineering
enormous enter enterprise entertainment enthusiasm entry environment environmental episode
equal equipment escape essay essential establish estate evaluate evidence evolve examine
exchange exercise exist existence exit expand expansion expense expensive expert expertise
explore exposure express expression extend extensive extent external extreme fail failure faith
false fame familiar famous fan fancy fantastic farm fashion fat fault favor fear feature
federal female fewer fiction fifteen fight fighting film finance financial finding finger firm
fish fitness flat flexible float flow flower fly focus folk football force foreign forest
forever formal former fortune forum foundation frame framework frankly freedom frequent
frequently fresh fruit frustrating frustration fuel fund funding funny furniture gain gap
garden gas gather gear gender general generate generation generous gentle gift given global
gold golden goods grab grade gradually graduate grand grant grateful ground growth guarantee
guard guest habit hall handful hang hardly harm hat hate heading heat heavy height hidden hide
highlight hill hire historic historical hobby holiday hole honor horrible horse host hot
household housing human humor hunt hurt ideal identify identity ignore ill illegal illness
image imagination impact implement implication imply impose impossible impression impressive
improve improvement incident income independent index indicate individual industry influence
inform initial initiative injury inner innocent insight insist inspire install instruction
instrument intelligence intelligent intend intense intention internal international internet
interview introduce introduction invest investment investor invite involve involved island
isolated item journey joy judge judgment jump junior justice justify kick kill king knowledge
lab labor lack lake landscape largely laugh launch lawyer lay lead leader leadership leading
league lean learn learning leather lecture legal legend leisure lesson letter lie lift limit
limited loan local locate lock lonely loose lose loss lost loud lovely lower loyal luck lucky
machine magazine mail maintain maintenance majority male mall map margin mark marketing
marriage married mass massive master match material math mathematics meal measure meat media
medical medicine medium memory mental mess metal middle mild military milk mine minister minor
minority mirror mission mistake mix mobile mode modern modest moral motion motivation motor
mount mountain mouse mouth movie multiple murder muscle museum mystery narrative nation
national native natural nature necessary neck negative neighbor neighborhood nervous net
neutral nine nobody noise nose novel numerous object objective obligation observe obtain
obvious occasion occasional occasionally occupy occur ocean odd offense officer official
ongoing opening operate operation opinion opponent opportunity oppose opposite ordinary
organization organize origin original outcome outside outstanding overcome overwhelming pace
pain paint painting pair panel parking participant participate partner passenger passion
passionate past path patience patient pattern peace peak percent perform performance permanent
permission permit phase philosophy photo photograph physical piano piece pile pilot pink pitch
plain planet plastic plate pleasant pleasure pocket poem poet poetry pole police political
politics pool poor popular population portion position positive possession possibility
potential pound poverty powerful practical practice praise pray prayer predict prefer
preference pregnant preparation prepare presence present presentation preserve press pressure
prevent previous pride primary prime principal principle print prior priority prison private
prize pro producer production profession professional professor profit progress promote proof
proper property proposal propose prospect protect protection proud prove public publish purpose
pursue qualify quarter queen quiet race radio raise range rank rapid rapidly rare rate raw
reach react reaction reader reading reality realize rear reasonable rebuild recipe recognize
recommendation recover recovery reduce reflect reform refuse regional regular regulation reject
relate relation relationship relative relax release relevant relief religion religious rely
remain remaining remarkable remove rent repair repeat replace represent reputation research
researcher reserve resident resist resolve resource respect respond response responsibility
responsible rest restaurant restore restrict rich ride ring rise risk river rock roll romantic
roof root rough round routine row rural rush sad safe safety salary sample sand satisfy scale
scene scheme scholar score scream seat secret secretary sector secure seek segment select
selection senior sensitive separate sequence series serve session settle seven severe sex shake
shape sharp sheet shift shine ship shirt shock shoe shoot shopping shot shoulder shout sick
sight sign signal significant silence silent silly silver similar sing singer sit site
situation skill skin sky sleep slide slight slip slow smart smell smile smoke smooth snow
social society soft software soil soldier solid solution solve song sophisticated soul south
southern spare speaker speech speed spirit split spot spread spring square stable stage stand
standard star statement station status stay steady steal stick stock stomach stone storage
storm strange stranger strategy stream strength stress stretch strict strike string strong
structure struggle studio style subject succeed success successful sudden suddenly suffer sugar
suit summer sun supply surface surprise surprised surprising surround survey survive suspect
sweet swim switch symbol sympathy talent tall tape target taste tax tea teach teaching tear
technical technique technology teen teenager telephone temperature temporary tend tendency
tension tent terrible territory testing theater theme theory therapy thick thin third thirty
threat threaten throw ticket tie tight tiny tip tire tired title tone tongue tonight tooth
topic touch tough tour tourist tournament trade tradition traditional traffic train training
transfer transform transition translate transport travel traveling treat treatment trend trial
trick trouble truck trust truth tune twice typical ugly ultimate uncle unique unit universe
university unknown unusual upper upset urban urge urgent vacation valley valuable variety vast
vehicle venture version victim victory video village violence visible vision visit visitor
visual vital voice volume volunteer vote wage walk walking warm warn warning wash waste wave
weak wealth weapon wear wedding weekend weekly weight west western wet wheel wide widely wild
win wind wine winner winter wire wise witness wood wooden worker worried worse worst worth
writer writing yard yellow young youth zone
"""

COMMON_WORDS: frozenset[str] = frozenset(_WORDS.split())
"""The list, lower-case."""

_SUFFIXES = ("'s", "s", "es", "ed", "d", "ing", "ly", "er", "est")


def is_common(word: str) -> bool:
    """Whether ``word`` (any case) or a simple inflection of it is on the list."""
    w = word.casefold().replace("\u2019", "'")
    if w in COMMON_WORDS:
        return True
    for suffix in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 2:
            stem = w[: -len(suffix)]
            if stem in COMMON_WORDS or stem + "e" in COMMON_WORDS:
                return True
            doubled = suffix == "ing" and len(stem) > 2 and stem[-1] == stem[-2]
            if doubled and stem[:-1] in COMMON_WORDS:  # "getting"
                return True
    if w.endswith("ies") and w[:-3] + "y" in COMMON_WORDS:
        return True
    return w.endswith("ied") and w[:-3] + "y" in COMMON_WORDS
