/*
 * corpus.c — a generated English-like corpus, for machines where the
 * Shakespeare text cannot be fetched: a small language model still has real
 * structure to learn from it, at every scale a character model sees.
 *
 *   spelling    a fixed vocabulary of about 600 word forms;
 *   agreement   a subject's person and number choose the verb's form
 *               ("the king walks", "the kings walk", "I am", "they were"),
 *               "a" becomes "an" before a vowel, "Does"/"Do"/"Did" lead a
 *               question and take the bare verb;
 *   syntax      noun phrases (determiner, adjective, noun, "of" phrase),
 *               transitive, intransitive and copular verb phrases, prepositional
 *               phrases, coordinated and subordinate clauses, questions,
 *               exclamations and quoted speech;
 *   layout      capitalised sentences, lines wrapped at 72 columns, paragraphs
 *               of 2 to 6 sentences, each told in one tense, with a blank line
 *               between them.
 *
 * Every choice is a draw of one counter-based stream (SYM_RNG_CORPUS, index 0)
 * of the seed, so the text is a pure function of (seed, bytes), and the text
 * for a larger size begins with the text for a smaller one.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/data.h>
#include <symtrain/rng.h>

#include "internal.h"

#define COUNT(a) (sizeof(a) / sizeof *(a))
#define WIDTH 72 /* columns of a line */

/* ---- the vocabulary ---- */

typedef struct {
    const char *sg, *pl;
} noun_t;

typedef struct {
    const char *s3, *base, *past; /* "walks", "walk", "walked" */
} verb_t;

static const noun_t nouns[] = {
    {"king", "kings"},         {"queen", "queens"},         {"prince", "princes"},
    {"princess", "princesses"}, {"knight", "knights"},      {"lord", "lords"},
    {"lady", "ladies"},        {"child", "children"},       {"man", "men"},
    {"woman", "women"},        {"friend", "friends"},       {"soldier", "soldiers"},
    {"servant", "servants"},   {"father", "fathers"},       {"mother", "mothers"},
    {"brother", "brothers"},   {"sister", "sisters"},       {"daughter", "daughters"},
    {"son", "sons"},           {"stranger", "strangers"},   {"merchant", "merchants"},
    {"sailor", "sailors"},     {"farmer", "farmers"},       {"shepherd", "shepherds"},
    {"poet", "poets"},         {"fool", "fools"},           {"thief", "thieves"},
    {"wolf", "wolves"},        {"fox", "foxes"},            {"horse", "horses"},
    {"dog", "dogs"},           {"cat", "cats"},             {"bird", "birds"},
    {"crow", "crows"},         {"owl", "owls"},             {"sheep", "sheep"},
    {"mouse", "mice"},         {"goose", "geese"},          {"fish", "fish"},
    {"bear", "bears"},         {"lion", "lions"},           {"river", "rivers"},
    {"mountain", "mountains"}, {"forest", "forests"},       {"field", "fields"},
    {"garden", "gardens"},     {"house", "houses"},         {"castle", "castles"},
    {"tower", "towers"},       {"city", "cities"},          {"village", "villages"},
    {"road", "roads"},         {"bridge", "bridges"},       {"ship", "ships"},
    {"boat", "boats"},         {"sea", "seas"},             {"island", "islands"},
    {"star", "stars"},         {"moon", "moons"},           {"cloud", "clouds"},
    {"storm", "storms"},       {"wind", "winds"},           {"fire", "fires"},
    {"stone", "stones"},       {"tree", "trees"},           {"flower", "flowers"},
    {"rose", "roses"},         {"leaf", "leaves"},          {"apple", "apples"},
    {"loaf", "loaves"},        {"cup", "cups"},             {"sword", "swords"},
    {"crown", "crowns"},       {"ring", "rings"},           {"letter", "letters"},
    {"book", "books"},         {"song", "songs"},           {"story", "stories"},
    {"door", "doors"},         {"window", "windows"},       {"candle", "candles"},
    {"key", "keys"},           {"coin", "coins"},           {"box", "boxes"},
    {"church", "churches"},    {"wall", "walls"},           {"gate", "gates"},
    {"hill", "hills"},         {"valley", "valleys"},       {"lake", "lakes"},
    {"well", "wells"},         {"wheel", "wheels"},         {"bell", "bells"},
    {"cloak", "cloaks"},       {"knife", "knives"},         {"shadow", "shadows"},
    {"dream", "dreams"},       {"heart", "hearts"},         {"hand", "hands"},
    {"voice", "voices"},       {"promise", "promises"},     {"gift", "gifts"},
    {"feast", "feasts"},       {"night", "nights"},         {"morning", "mornings"},
    {"winter", "winters"},     {"army", "armies"},          {"enemy", "enemies"},
    {"hero", "heroes"},        {"ghost", "ghosts"},         {"witch", "witches"},
    {"angel", "angels"},       {"echo", "echoes"},          {"orchard", "orchards"},
    {"eagle", "eagles"},       {"oak", "oaks"},             {"inn", "inns"},
};

static const char *const adjectives[] = {
    "old",     "young",   "proud",   "gentle",   "brave",    "cruel",  "wise",    "foolish",
    "quiet",   "noisy",   "dark",    "bright",   "cold",     "warm",   "green",   "golden",
    "silver",  "red",     "white",   "black",    "small",    "great",  "little",  "tall",
    "strong",  "weak",    "poor",    "rich",     "sad",      "happy",  "angry",   "hungry",
    "tired",   "false",   "strange", "fair",     "sweet",    "bitter", "wild",    "heavy",
    "ancient", "empty",   "hollow",  "lonely",   "merry",    "patient", "silent", "swift",
    "slow",    "kind",    "loyal",   "noble",    "humble",   "wicked", "clever",  "careful",
    "distant", "broken",  "hidden",  "shining",  "frozen",   "eager",  "idle",    "evil",
    "icy",     "open",    "honest",  "uneasy",   "ugly",     "elder",
};

static const verb_t transitive[] = {
    {"sees", "see", "saw"},           {"finds", "find", "found"},
    {"loves", "love", "loved"},       {"hates", "hate", "hated"},
    {"follows", "follow", "followed"}, {"keeps", "keep", "kept"},
    {"takes", "take", "took"},        {"holds", "hold", "held"},
    {"carries", "carry", "carried"},  {"builds", "build", "built"},
    {"breaks", "break", "broke"},     {"burns", "burn", "burned"},
    {"calls", "call", "called"},      {"watches", "watch", "watched"},
    {"remembers", "remember", "remembered"}, {"forgets", "forget", "forgot"},
    {"fears", "fear", "feared"},      {"praises", "praise", "praised"},
    {"meets", "meet", "met"},         {"leaves", "leave", "left"},
    {"seeks", "seek", "sought"},      {"steals", "steal", "stole"},
    {"hides", "hide", "hid"},         {"guards", "guard", "guarded"},
    {"serves", "serve", "served"},    {"wants", "want", "wanted"},
    {"needs", "need", "needed"},      {"knows", "know", "knew"},
    {"trusts", "trust", "trusted"},   {"teaches", "teach", "taught"},
    {"chases", "chase", "chased"},    {"catches", "catch", "caught"},
    {"opens", "open", "opened"},      {"closes", "close", "closed"},
    {"sells", "sell", "sold"},        {"buys", "buy", "bought"},
    {"brings", "bring", "brought"},   {"wakes", "wake", "woke"},
    {"paints", "paint", "painted"},   {"crosses", "cross", "crossed"},
    {"climbs", "climb", "climbed"},   {"answers", "answer", "answered"},
    {"greets", "greet", "greeted"},   {"blesses", "bless", "blessed"},
    {"wins", "win", "won"},           {"loses", "lose", "lost"},
    {"writes", "write", "wrote"},     {"betrays", "betray", "betrayed"},
    {"rescues", "rescue", "rescued"}, {"marries", "marry", "married"},
    {"forgives", "forgive", "forgave"}, {"defends", "defend", "defended"},
};

static const verb_t intransitive[] = {
    {"sleeps", "sleep", "slept"},       {"weeps", "weep", "wept"},
    {"laughs", "laugh", "laughed"},     {"sings", "sing", "sang"},
    {"dances", "dance", "danced"},      {"waits", "wait", "waited"},
    {"runs", "run", "ran"},             {"walks", "walk", "walked"},
    {"falls", "fall", "fell"},          {"rises", "rise", "rose"},
    {"dreams", "dream", "dreamed"},     {"speaks", "speak", "spoke"},
    {"listens", "listen", "listened"},  {"prays", "pray", "prayed"},
    {"smiles", "smile", "smiled"},      {"trembles", "tremble", "trembled"},
    {"wanders", "wander", "wandered"},  {"returns", "return", "returned"},
    {"arrives", "arrive", "arrived"},   {"departs", "depart", "departed"},
    {"sighs", "sigh", "sighed"},        {"shines", "shine", "shone"},
    {"grows", "grow", "grew"},          {"rests", "rest", "rested"},
    {"fights", "fight", "fought"},      {"hunts", "hunt", "hunted"},
};

static const char *const adverbs[] = {
    "slowly",  "quickly", "softly",   "loudly",   "gladly",      "sadly",    "quietly",
    "often",   "never",   "always",   "again",    "alone",       "together", "bravely",
    "gently",  "suddenly", "silently", "kindly",  "wisely",      "proudly",  "faithfully",
    "at dawn", "at night", "in secret", "for a while", "once more", "at last",
};

static const char *const prepositions[] = {
    "in",     "on",    "near",    "beside", "under", "behind", "beyond", "across",
    "through", "above", "below",  "toward", "from",  "with",   "without", "along",
};

static const char *const names[] = {
    "Anna",    "Bertram", "Celia",   "Duncan",   "Edmund",    "Flora",  "Gregory", "Helena",
    "Isabel",  "Julian",  "Katherine", "Leontes", "Miranda",  "Nestor", "Olivia",  "Portia",
    "Quentin", "Rosalind", "Sebastian", "Timon",  "Ursula",   "Viola",  "Walter",  "Yorick",
    "Beatrice", "Orlando", "Perdita", "Oswald",   "Emilia",    "Angelo",
};

/* Subject classes: 0 third person singular, 1 plural (and we, you), 2 I. */
enum { SG = 0, PL = 1, FIRST = 2 };

static const char *const det_sg[] = {"the", "the", "the", "a", "a", "this", "that", "every",
                                     "no", "my", "his", "her", "our", "their", "one"};
static const char *const det_pl[] = {"the", "the", "the", "these", "those", "many", "some",
                                     "few", "all the", "my", "our", "their", "two", "three"};
static const char *const pron_subj[] = {"he", "she", "it", "they", "we", "you", "I"};
static const int pron_class[] = {SG, SG, SG, PL, PL, PL, FIRST};
static const char *const pron_obj[] = {"him", "her", "it", "them", "us", "you", "me"};
static const char *const conjunctions[] = {"and", "but", "for", "yet", "so", "and then"};
static const char *const subordinators[] = {"when", "because", "while", "although", "if",
                                            "before", "after", "since", "until"};
static const char *const say_verbs[] = {"said", "cried", "whispered", "answered", "replied"};

/* ---- drawing ---- */

typedef struct {
    sym_rng_t r;
    char s[1024]; /* the sentence being built, words separated by spaces */
    size_t len;
    int cap_next; /* capitalise the next word */
    int glue;     /* no space before the next word (after an opening quote) */
} gen_t;

static size_t pick(gen_t *g, size_t n) { return (size_t)sym_rng_below(&g->r, n); }
static int chance(gen_t *g, float p) { return sym_rng_uniform(&g->r) < p; }
#define ONE_OF(g, a) ((a)[pick(g, COUNT(a))])

static void word(gen_t *g, const char *w) {
    size_t n = strlen(w);
    if (g->len + n + 2 > sizeof g->s) return; /* cannot happen: sentences are < 400 bytes */
    if (g->len && !g->glue) g->s[g->len++] = ' ';
    g->glue = 0;
    memcpy(g->s + g->len, w, n);
    if (g->cap_next && g->s[g->len] >= 'a' && g->s[g->len] <= 'z') g->s[g->len] -= 'a' - 'A';
    g->cap_next = 0;
    g->len += n;
}

/* Punctuation, attached to the word before it. */
static void punct(gen_t *g, const char *p) {
    size_t n = strlen(p);
    if (g->len + n + 1 > sizeof g->s) return;
    memcpy(g->s + g->len, p, n);
    g->len += n;
}

static void open_quote(gen_t *g) {
    word(g, "\"");
    g->glue = 1;
    g->cap_next = 1;
}

static int starts_with_vowel(const char *w) {
    /* "an honest": the h is silent; no word here starts with a "yu" sound */
    return strchr("aeiou", w[0]) != NULL || !strncmp(w, "hon", 3);
}

/* A noun phrase: a name, a pronoun, or [determiner] [adjective] noun [of NP].
 * Returns its subject class. */
static int noun_phrase(gen_t *g, int subject, int depth) {
    size_t r = pick(g, 20);
    if (r < 3) {
        word(g, ONE_OF(g, names));
        return SG;
    }
    if (r < 6) {
        size_t p = pick(g, COUNT(pron_subj));
        word(g, subject ? pron_subj[p] : pron_obj[p]);
        return pron_class[p];
    }
    int plural = chance(g, 0.35f);
    const noun_t *n = &ONE_OF(g, nouns);
    const char *adj = chance(g, 0.4f) ? ONE_OF(g, adjectives) : NULL;
    const char *det = plural ? ONE_OF(g, det_pl) : ONE_OF(g, det_sg);
    const char *next = adj ? adj : n->sg;
    if (!strcmp(det, "a") && starts_with_vowel(next)) det = "an";
    word(g, det);
    if (adj) word(g, adj);
    word(g, plural ? n->pl : n->sg);
    if (depth == 0 && chance(g, 0.1f)) {
        word(g, "of");
        noun_phrase(g, 0, depth + 1);
    }
    return plural ? PL : SG;
}

static const char *verb_form(const verb_t *v, int cls, int past) {
    return past ? v->past : cls == SG ? v->s3 : v->base;
}

static void verb_phrase(gen_t *g, int cls, int past) {
    size_t r = pick(g, 10);
    if (r < 5) {
        word(g, verb_form(&ONE_OF(g, transitive), cls, past));
        noun_phrase(g, 0, 0);
    } else if (r < 8) {
        word(g, verb_form(&ONE_OF(g, intransitive), cls, past));
        if (chance(g, 0.4f)) word(g, ONE_OF(g, adverbs));
    } else {
        static const char *const be[2][3] = {{"is", "are", "am"}, {"was", "were", "was"}};
        word(g, be[past][cls]);
        if (chance(g, 0.3f)) word(g, chance(g, 0.5f) ? "very" : "not");
        word(g, ONE_OF(g, adjectives));
    }
    if (chance(g, 0.3f)) {
        word(g, ONE_OF(g, prepositions));
        noun_phrase(g, 0, 1);
    }
}

static void clause(gen_t *g, int past) { verb_phrase(g, noun_phrase(g, 1, 0), past); }

/* "Does the king see the moon?": the subject is drawn first, then the
 * auxiliary that agrees with it is put in front of it. */
static void question(gen_t *g, int past) {
    int cap = g->cap_next;
    g->cap_next = 0;
    size_t at = g->len && !g->glue ? g->len + 1 : g->len; /* where the subject starts */
    int cls = noun_phrase(g, 1, 0);
    const char *aux = past ? "did " : cls == SG ? "does " : "do ";
    size_t n = strlen(aux);
    if (g->len + n + 1 > sizeof g->s) return;
    memmove(g->s + at + n, g->s + at, g->len - at);
    memcpy(g->s + at, aux, n);
    if (cap) g->s[at] = 'D';
    g->len += n;
    int trans = chance(g, 0.6f);
    const verb_t *v = trans ? &ONE_OF(g, transitive) : &ONE_OF(g, intransitive);
    word(g, v->base);
    if (trans) noun_phrase(g, 0, 0);
    punct(g, "?");
}

/* One sentence into g->s (past: the paragraph's tense). */
static void sentence(gen_t *g, int past) {
    g->len = 0;
    g->glue = 0;
    g->cap_next = 1;
    size_t r = pick(g, 100);
    if (r < 42) {
        clause(g, past);
        punct(g, ".");
    } else if (r < 56) {
        clause(g, past);
        punct(g, ",");
        word(g, ONE_OF(g, conjunctions));
        clause(g, past);
        punct(g, ".");
    } else if (r < 66) {
        word(g, ONE_OF(g, subordinators));
        clause(g, past);
        punct(g, ",");
        clause(g, past);
        punct(g, ".");
    } else if (r < 73) {
        question(g, past);
    } else if (r < 78) {
        if (chance(g, 0.5f)) {
            int plural = chance(g, 0.3f);
            const noun_t *n = &ONE_OF(g, nouns);
            word(g, "how");
            word(g, ONE_OF(g, adjectives));
            word(g, "the");
            word(g, plural ? n->pl : n->sg);
            word(g, past ? (plural ? "were" : "was") : (plural ? "are" : "is"));
        } else {
            const char *adj = ONE_OF(g, adjectives);
            word(g, "what");
            word(g, starts_with_vowel(adj) ? "an" : "a");
            word(g, adj);
            word(g, ONE_OF(g, nouns).sg);
        }
        punct(g, "!");
    } else if (r < 90) {
        /* Anna said, "The moon is cold." — speech is in the present */
        word(g, ONE_OF(g, names));
        word(g, ONE_OF(g, say_verbs));
        punct(g, ",");
        open_quote(g);
        if (chance(g, 0.25f)) {
            question(g, 0);
        } else {
            clause(g, 0);
            punct(g, chance(g, 0.2f) ? "!" : ".");
        }
        punct(g, "\"");
    } else {
        /* "The moon is cold," said Anna. */
        open_quote(g);
        clause(g, 0);
        punct(g, ",\"");
        word(g, ONE_OF(g, say_verbs));
        word(g, ONE_OF(g, names));
        punct(g, ".");
    }
}

/* ---- layout ---- */

typedef struct {
    char *buf;
    size_t len, cap;
    size_t col; /* column of the current line */
    int failed;
} out_t;

static void emit(out_t *o, const char *p, size_t n) {
    if (o->failed) return;
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap * 2 > o->len + n + 1 ? o->cap * 2 : o->len + n + 1;
        char *b = realloc(o->buf, cap);
        if (!b) {
            o->failed = 1;
            return;
        }
        o->buf = b;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, p, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

/* Append the sentence's words, wrapping lines at WIDTH columns. */
static void emit_wrapped(out_t *o, const char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && s[j] != ' ') j++;
        size_t n = j - i;
        if (o->col > 0 && o->col + 1 + n > WIDTH) {
            emit(o, "\n", 1);
            o->col = 0;
        } else if (o->col > 0) {
            emit(o, " ", 1);
            o->col++;
        }
        emit(o, s + i, n);
        o->col += n;
        i = j + 1;
    }
}

char *sym_corpus_generate(uint64_t seed, size_t bytes) {
    if (bytes > SIZE_MAX / 2) return NULL;
    out_t o = {malloc(bytes + 1024), 0, bytes + 1024, 0, 0};
    if (!o.buf) return NULL;
    o.buf[0] = '\0';
    gen_t *g = malloc(sizeof *g);
    if (!g) {
        free(o.buf);
        return NULL;
    }
    g->r = sym_rng_stream(sym_rng_key(seed, SYM_RNG_CORPUS, 0));
    while (o.len < bytes && !o.failed) {
        if (o.len > 0) { /* end the paragraph's last line, then a blank line */
            emit(&o, "\n\n", 2);
            o.col = 0;
        }
        int past = chance(g, 0.6f);
        int count = 2 + (int)pick(g, 5);
        for (int k = 0; k < count && o.len < bytes; k++) {
            sentence(g, past);
            emit_wrapped(&o, g->s, g->len);
        }
    }
    if (o.len > 0) emit(&o, "\n", 1);
    free(g);
    if (o.failed) {
        free(o.buf);
        return NULL;
    }
    return o.buf;
}
