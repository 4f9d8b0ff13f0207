/* FingerprintTable: the parallel checker's set of visited fingerprints, one hash table in shared
 * memory that every forked worker claims successors in (see engine/fptable.py for the design and
 * for PyFingerprintTable, the same table in Python).
 *
 * Why in C: a claim happens once per successor, so it has to cost about what a dict lookup costs,
 * and workers must see each other's claims without a lock. The mapping is MAP_SHARED and anonymous,
 * made before fork, so every worker has it at the same place; each word is updated with GCC's
 * __atomic builtins (lock-free on x86-64 and aarch64, hence between processes too):
 *
 * - a fingerprint is inserted by a CAS of its slot's fingerprint word from 0 (empty);
 * - its key word keeps the smallest discovery key ever claimed (a CAS loop: an atomic min), so
 *   the winner of a fingerprint does not depend on timing;
 * - the header (capacity, count, grow-wanted flag, the slot of fingerprint 0) is in the mapping
 *   too, so a grow done by one process is seen by all.
 *
 * The table never grows during a claim: a claim that pushes the load past 3/4 raises the
 * grow-wanted flag and later claims refuse (-1) until grow() is called by a process that knows
 * nobody else is using the table.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "_fingerprints.h"
#include "_module.h"

#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0
#endif

#define EMPTY_KEY UINT64_MAX
#define MIN_SLOTS ((Py_ssize_t)16)
#define MOST_SLOTS ((Py_ssize_t)1 << 48) /* beyond any address space: the reservation halves anyway */

/* The shared header, in 64-bit words before the slots (engine/fptable.py uses the same layout). */
enum {
    H_CAPACITY,     /* slots in use (a power of two) */
    H_COUNT,        /* entries, fingerprint 0 included */
    H_GROW,         /* 1: a claim found the table too full; claims refuse until grow() */
    H_ZERO_PRESENT, /* fingerprint 0 has been claimed */
    H_ZERO_KEY,     /* its key (EMPTY_KEY while absent) */
    H_ZERO_PARENT,  /* its parent */
    HEADER_WORDS = 8,
};

/* One slot: fingerprint (0: empty), key (EMPTY_KEY until claimed), parent (0 until settled), and a
 * spare word that makes a slot 32 bytes: the header is 64 bytes and the mapping page-aligned, so a
 * slot never straddles two cache lines and a claim costs one miss, not sometimes two. */
enum { S_FP, S_KEY, S_PARENT, S_SPARE, SLOT_WORDS };

typedef struct {
    PyObject_HEAD
    uint64_t *base;       /* the mapping: header, then slots */
    size_t mapped;        /* its length in bytes */
    Py_ssize_t reserved;  /* slots the mapping holds room for */
    uint64_t unflushed;   /* entries this process inserted and has not yet added to the count */
    uint64_t *kept;       /* this process's claims kept for settle_kept(): key, fp, parent, ... */
    Py_ssize_t nkept;     /* claims in kept */
    Py_ssize_t kept_room; /* claims kept has room for */
} FingerprintTable;

static PyObject *small[3]; /* -1, 0, 1: claim's answers, made once */

static inline uint64_t *
slots_of(FingerprintTable *self)
{
    return self->base + HEADER_WORDS;
}

static inline uint64_t
load(uint64_t *w)
{
    return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

/* Lower the key word *w to key if that is smaller; 1 if this call stored it. */
static inline int
atomic_min(uint64_t *w, uint64_t key)
{
    uint64_t seen = load(w);
    while (seen > key) {
        if (__atomic_compare_exchange_n(w, &seen, key, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            return 1;
        }
    }
    return 0;
}

/* The slot holding fp (non-zero), or NULL. */
static uint64_t *
find(FingerprintTable *self, uint64_t fp)
{
    uint64_t cap = load(self->base + H_CAPACITY);
    uint64_t *slots = slots_of(self);
    size_t i = home(fp, cap - 1);
    for (uint64_t n = 0; n < cap; n++, i = (i + 1) & (cap - 1)) {
        uint64_t *s = slots + i * SLOT_WORDS;
        uint64_t seen = load(s + S_FP);
        if (seen == fp) {
            return s;
        }
        if (seen == 0) {
            return NULL;
        }
    }
    return NULL;
}

/* The key and parent words of fp (the zero slot for 0), or NULL when fp is absent. */
static uint64_t *
entry_words(FingerprintTable *self, uint64_t fp)
{
    if (fp == 0) {
        return load(self->base + H_ZERO_PRESENT) ? self->base + H_ZERO_KEY : NULL;
    }
    uint64_t *s = find(self, fp);
    return s == NULL ? NULL : s + S_KEY;
}

/* Add this process's new entries to the shared count, and ask for growth past a load of 3/4. */
static void
flush_count(FingerprintTable *self)
{
    if (self->unflushed == 0) {
        return;
    }
    uint64_t count = __atomic_fetch_add(self->base + H_COUNT, self->unflushed, __ATOMIC_ACQ_REL) + self->unflushed;
    self->unflushed = 0;
    if (count * 4 > load(self->base + H_CAPACITY) * 3) {
        __atomic_store_n(self->base + H_GROW, 1, __ATOMIC_RELEASE);
    }
}

/* After a new entry. The count is added to in batches of up to 64 (fewer in a small table, so
 * that the growth threshold is never overshot by more than 1/1024 of the slots per process):
 * the count shares its cache line with the capacity and the grow flag, which every claim reads,
 * and a write per insert would take that line away from the other workers each time. Each
 * process flushes its batch in settle_many() and len(), so the count is exact after a level. */
static inline void
counted(FingerprintTable *self)
{
    self->unflushed++;
    if (self->unflushed >= 64 || self->unflushed * 1024 >= load(self->base + H_CAPACITY)) {
        flush_count(self);
    }
}

/* 1: key stored; 0: a key <= key was there; -1: the table wants growth (nothing done). */
static int
claim(FingerprintTable *self, uint64_t fp, uint64_t key)
{
    if (load(self->base + H_GROW)) {
        flush_count(self); /* this process pauses now: its entries must be counted before grow() */
        return -1;
    }
    if (fp == 0) {
        uint64_t absent = 0;
        if (__atomic_compare_exchange_n(self->base + H_ZERO_PRESENT, &absent, 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            counted(self);
        }
        return atomic_min(self->base + H_ZERO_KEY, key);
    }
    uint64_t cap = load(self->base + H_CAPACITY);
    uint64_t *slots = slots_of(self);
    size_t i = home(fp, cap - 1);
    for (uint64_t n = 0; n < cap; n++, i = (i + 1) & (cap - 1)) {
        uint64_t *s = slots + i * SLOT_WORDS;
        uint64_t seen = load(s + S_FP);
        if (seen == 0) {
            if (__atomic_compare_exchange_n(s + S_FP, &seen, fp, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                int stored = atomic_min(s + S_KEY, key);
                counted(self);
                return stored;
            }
            /* another process took the slot first: seen is what it wrote */
        }
        if (seen == fp) {
            return atomic_min(s + S_KEY, key);
        }
    }
    /* every slot taken (claims already under way when the flag rose): refuse, as when flagged */
    __atomic_store_n(self->base + H_GROW, 1, __ATOMIC_RELEASE);
    flush_count(self);
    return -1;
}

/* A key, or a part of one: an int in [0, 2**63). */
static inline int
key_arg(PyObject *o, uint64_t *out)
{
    return word_arg(o, out, "keys", 1);
}

static int
check_nargs(const char *name, Py_ssize_t nargs, Py_ssize_t want)
{
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", name, want, nargs);
        return -1;
    }
    return 0;
}

static int
check_mapped(FingerprintTable *self)
{
    if (self->base == NULL) {
        PyErr_SetString(PyExc_ValueError, "the FingerprintTable was never initialised");
        return -1;
    }
    return 0;
}

/* Remember a successful claim for settle_kept(), in this process's own memory. */
static int
keep(FingerprintTable *self, uint64_t key, uint64_t fp, uint64_t parent)
{
    if (self->nkept == self->kept_room) {
        Py_ssize_t room = self->kept_room ? self->kept_room * 2 : 1024;
        uint64_t *grown = PyMem_Realloc(self->kept, (size_t)room * 3 * sizeof(uint64_t));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        self->kept = grown;
        self->kept_room = room;
    }
    uint64_t *e = self->kept + self->nkept++ * 3;
    e[0] = key;
    e[1] = fp;
    e[2] = parent;
    return 0;
}

static PyObject *
table_claim(FingerprintTable *self, PyObject *const *args, Py_ssize_t nargs)
{
    uint64_t fp, base, index, parent = 0;
    if (nargs != 3 && nargs != 4) {
        PyErr_Format(PyExc_TypeError, "claim() takes 3 or 4 arguments (%zd given)", nargs);
        return NULL;
    }
    if (check_mapped(self) < 0 || fp_arg(args[0], &fp) < 0 || key_arg(args[1], &base) < 0
            || key_arg(args[2], &index) < 0 || (nargs == 4 && fp_arg(args[3], &parent) < 0)) {
        return NULL;
    }
    int got = claim(self, fp, base | index);
    if (got == 1 && nargs == 4 && keep(self, base | index, fp, parent) < 0) {
        return NULL;
    }
    PyObject *r = small[got + 1];
    Py_INCREF(r);
    return r;
}

/* prefetch(fp): start fetching fp's home slot, for a claim() of fp soon after. A claim is a cache
 * miss and, in a table of 4 KiB pages (shared memory gets no huge pages), a TLB miss too: the
 * parallel search asks for every successor's slot when it has the fingerprint and claims them all
 * once the state is expanded, so the misses overlap with each other and with the expansion. */
static PyObject *
table_prefetch(FingerprintTable *self, PyObject *arg)
{
    uint64_t fp;
    if (check_mapped(self) < 0 || fp_arg(arg, &fp) < 0) {
        return NULL;
    }
    if (fp != 0) {
        uint64_t cap = load(self->base + H_CAPACITY);
        __builtin_prefetch(slots_of(self) + home(fp, cap - 1) * SLOT_WORDS, 1);
    }
    Py_RETURN_NONE;
}

static PyObject *
table_settle(FingerprintTable *self, PyObject *const *args, Py_ssize_t nargs)
{
    uint64_t fp, key, parent;
    if (check_nargs("settle", nargs, 3) < 0 || check_mapped(self) < 0 || fp_arg(args[0], &fp) < 0
            || key_arg(args[1], &key) < 0 || fp_arg(args[2], &parent) < 0) {
        return NULL;
    }
    uint64_t *w = entry_words(self, fp);
    if (w == NULL || load(w) != key) {
        Py_RETURN_FALSE;
    }
    __atomic_store_n(w + 1, parent, __ATOMIC_RELEASE); /* only the unique winner of fp gets here */
    Py_RETURN_TRUE;
}

/* How far ahead settle_many prefetches: enough entries in flight to hide a memory access. */
#define PREFETCH_AHEAD 8

static inline void
prefetch_home(FingerprintTable *self, uint64_t fp, uint64_t cap)
{
    __builtin_prefetch(slots_of(self) + home(fp, cap - 1) * SLOT_WORDS, 1);
}

/* settle_kept(): settle() every claim this process kept (claim's fourth argument, the parent),
 * in the order made, with the slots fetched ahead (each settle is otherwise a cache miss), and
 * forget them. Returns (one byte per kept claim, 1 for a winner; the winners' keys, as native
 * int64 words in bytes; their fingerprints, a list). Reading the claims from this process's own
 * array, not from Python ints, and handing the keys back as bytes (they are only ranked and
 * compared, never used one by one in Python) is what makes settling a level cheap. */
static PyObject *
table_settle_kept(FingerprintTable *self, PyObject *Py_UNUSED(ignored))
{
    if (check_mapped(self) < 0) {
        return NULL;
    }
    flush_count(self); /* the claims of this process are over: make the count exact */
    Py_ssize_t n = self->nkept;
    Py_ssize_t nwon = 0;
    PyObject *mask = PyBytes_FromStringAndSize(NULL, n);
    PyObject *keys = NULL;
    PyObject *fps = PyList_New(0);
    if (mask == NULL || fps == NULL) {
        goto fail;
    }
    char *won = PyBytes_AS_STRING(mask);
    uint64_t cap = load(self->base + H_CAPACITY);
    for (Py_ssize_t j = 0; j < n && j < PREFETCH_AHEAD; j++) {
        prefetch_home(self, self->kept[j * 3 + 1], cap);
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        if (j + PREFETCH_AHEAD < n) {
            prefetch_home(self, self->kept[(j + PREFETCH_AHEAD) * 3 + 1], cap);
        }
        uint64_t *e = self->kept + j * 3;
        uint64_t *w = entry_words(self, e[1]);
        if (w == NULL || load(w) != e[0]) {
            won[j] = 0;
            continue;
        }
        __atomic_store_n(w + 1, e[2], __ATOMIC_RELEASE); /* only the unique winner of fp gets here */
        won[j] = 1;
        PyObject *fp = PyLong_FromLongLong((long long)(int64_t)e[1]);
        if (fp == NULL || PyList_Append(fps, fp) < 0) {
            Py_XDECREF(fp);
            goto fail;
        }
        Py_DECREF(fp);
        self->kept[nwon++] = e[0]; /* the winners' keys, in order, over the claims already read */
    }
    keys = PyBytes_FromStringAndSize((const char *)self->kept, nwon * (Py_ssize_t)sizeof(uint64_t));
    if (keys == NULL) {
        goto fail;
    }
    self->nkept = 0;
    if (self->kept_room > (1 << 20)) { /* a large level's array is not kept for the next one */
        PyMem_Free(self->kept);
        self->kept = NULL;
        self->kept_room = 0;
    }
    return Py_BuildValue("(NNN)", mask, keys, fps);
fail:
    self->nkept = 0;
    Py_XDECREF(mask);
    Py_XDECREF(keys);
    Py_XDECREF(fps);
    return NULL;
}

/* A buffer argument of native int64 words: its words and how many, or -1 with an exception. */
static int
words_arg(PyObject *o, Py_buffer *view, const char *what)
{
    if (PyObject_GetBuffer(o, view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (view->len % (Py_ssize_t)sizeof(int64_t) != 0) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes are not a whole number of 64-bit keys", what, view->len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

#define MAX_RUNS 1024

/* ranks_in_level(keys, runs): for each key of keys (sorted int64 words), how many keys of the
 * level are smaller, the level being the sorted runs (one per worker, int64 words each); every
 * key must be in one run. One merge walk in C: a held state's rank is its position among every
 * worker's states of the level, which its successors' discovery keys are made of. */
static PyObject *
table_ranks_in_level(PyObject *Py_UNUSED(cls), PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("ranks_in_level", nargs, 2) < 0) {
        return NULL;
    }
    if (!PyList_Check(args[1])) {
        PyErr_Format(PyExc_TypeError, "ranks_in_level() takes a list of runs (got %.100s)", Py_TYPE(args[1])->tp_name);
        return NULL;
    }
    Py_ssize_t nruns = PyList_GET_SIZE(args[1]);
    if (nruns > MAX_RUNS) {
        PyErr_Format(PyExc_ValueError, "ranks_in_level() takes at most %d runs", MAX_RUNS);
        return NULL;
    }
    Py_buffer own, views[MAX_RUNS];
    Py_ssize_t walked[MAX_RUNS];
    Py_ssize_t got = 0;
    PyObject *result = NULL;
    if (words_arg(args[0], &own, "keys") < 0) {
        return NULL;
    }
    for (; got < nruns; got++) {
        if (words_arg(PyList_GET_ITEM(args[1], got), &views[got], "a run") < 0) {
            goto done;
        }
        walked[got] = 0;
    }
    const int64_t *keys = own.buf;
    Py_ssize_t n = own.len / (Py_ssize_t)sizeof(int64_t);
    result = PyList_New(n);
    if (result == NULL) {
        goto done;
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        int64_t key = keys[j];
        if (j > 0 && key <= keys[j - 1]) {
            PyErr_SetString(PyExc_ValueError, "ranks_in_level(): the keys are not in increasing order");
            Py_CLEAR(result);
            goto done;
        }
        Py_ssize_t position = 0;
        int present = 0;
        for (Py_ssize_t r = 0; r < nruns; r++) {
            const int64_t *run = views[r].buf;
            Py_ssize_t end = views[r].len / (Py_ssize_t)sizeof(int64_t);
            Py_ssize_t p = walked[r];
            while (p < end && run[p] < key) {
                p++;
            }
            walked[r] = p;
            position += p;
            present |= p < end && run[p] == key;
        }
        if (!present) {
            PyErr_Format(PyExc_ValueError, "a held state's key %lld is not among the level's keys", (long long)key);
            Py_CLEAR(result);
            goto done;
        }
        PyObject *rank = PyLong_FromSsize_t(position);
        if (rank == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, j, rank);
    }
done:
    PyBuffer_Release(&own);
    for (Py_ssize_t r = 0; r < got; r++) {
        PyBuffer_Release(&views[r]);
    }
    return result;
}

/* The key and parent words of the fingerprint argument: 0 with *w set (NULL when absent), or -1
 * with an exception for a bad argument. */
static int
words_of_arg(FingerprintTable *self, PyObject *arg, uint64_t **w)
{
    uint64_t fp;
    if (check_mapped(self) < 0 || fp_arg(arg, &fp) < 0) {
        return -1;
    }
    *w = entry_words(self, fp);
    return 0;
}

static PyObject *
table_entry(FingerprintTable *self, PyObject *arg)
{
    uint64_t *w;
    if (words_of_arg(self, arg, &w) < 0) {
        return NULL;
    }
    if (w == NULL) {
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(KL)", (unsigned long long)load(w), (long long)(int64_t)load(w + 1));
}

static PyObject *
table_key_of(FingerprintTable *self, PyObject *arg)
{
    uint64_t *w;
    if (words_of_arg(self, arg, &w) < 0) {
        return NULL;
    }
    if (w == NULL) {
        Py_RETURN_NONE;
    }
    return PyLong_FromUnsignedLongLong(load(w));
}

static PyObject *
table_wants_growth(FingerprintTable *self, PyObject *Py_UNUSED(ignored))
{
    if (check_mapped(self) < 0) {
        return NULL;
    }
    return PyBool_FromLong(load(self->base + H_GROW) != 0);
}

/* Empty slots [0, n): fingerprint 0, key all ones, parent 0. */
static void
init_slots(uint64_t *slots, size_t n)
{
    memset(slots, 0, n * SLOT_WORDS * sizeof(uint64_t));
    for (size_t i = 0; i < n; i++) {
        slots[i * SLOT_WORDS + S_KEY] = EMPTY_KEY;
    }
}

/* Doubles the capacity (more if needed to leave room) and rehashes in place. The caller
 * guarantees no other process uses the table meanwhile, so plain stores suffice. */
static PyObject *
table_grow(FingerprintTable *self, PyObject *Py_UNUSED(ignored))
{
    if (check_mapped(self) < 0) {
        return NULL;
    }
    uint64_t *h = self->base;
    uint64_t cap = h[H_CAPACITY];
    uint64_t count = h[H_COUNT];
    uint64_t want = cap * 2;
    while (count * 4 > want * 3) {
        want *= 2;
    }
    if (want > (uint64_t)self->reserved) {
        PyErr_Format(PyExc_MemoryError, "the fingerprint table is full: %llu entries in its %zd reserved slots",
                     (unsigned long long)count, self->reserved);
        return NULL;
    }
    uint64_t *slots = slots_of(self);
    size_t used = 0;
    for (uint64_t i = 0; i < cap; i++) {
        used += slots[i * SLOT_WORDS + S_FP] != 0;
    }
    uint64_t *copy = PyMem_Malloc((used ? used : 1) * SLOT_WORDS * sizeof(uint64_t));
    if (copy == NULL) {
        return PyErr_NoMemory();
    }
    size_t k = 0;
    for (uint64_t i = 0; i < cap; i++) {
        if (slots[i * SLOT_WORDS + S_FP] != 0) {
            memcpy(copy + k++ * SLOT_WORDS, slots + i * SLOT_WORDS, SLOT_WORDS * sizeof(uint64_t));
        }
    }
    init_slots(slots, (size_t)want);
    for (size_t j = 0; j < used; j++) {
        uint64_t *e = copy + j * SLOT_WORDS;
        size_t i = home(e[S_FP], want - 1);
        while (slots[i * SLOT_WORDS + S_FP] != 0) {
            i = (i + 1) & (want - 1);
        }
        memcpy(slots + i * SLOT_WORDS, e, SLOT_WORDS * sizeof(uint64_t));
    }
    PyMem_Free(copy);
    h[H_COUNT] = used + (h[H_ZERO_PRESENT] != 0);
    self->unflushed = 0; /* counted by the recount above */
    __atomic_store_n(h + H_CAPACITY, want, __ATOMIC_RELEASE);
    __atomic_store_n(h + H_GROW, 0, __ATOMIC_RELEASE);
    Py_RETURN_NONE;
}

/* pairs(): every (fingerprint, parent) as two native 64-bit words (engine/checkpoint.py's parent
 * map, as engine/_parentmap.c's pairs() writes it; an initial state is settled as its own parent):
 * a snapshot of a parallel search. Only while no other process uses the table. */
static PyObject *
table_pairs(FingerprintTable *self, PyObject *Py_UNUSED(ignored))
{
    if (check_mapped(self) < 0) {
        return NULL;
    }
    uint64_t *h = self->base;
    uint64_t cap = load(h + H_CAPACITY);
    uint64_t *slots = slots_of(self);
    int zero = load(h + H_ZERO_PRESENT) != 0;
    Py_ssize_t used = 0;
    for (uint64_t i = 0; i < cap; i++) {
        used += slots[i * SLOT_WORDS + S_FP] != 0;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, (used + zero) * 16);
    if (out == NULL) {
        return NULL;
    }
    char *w = PyBytes_AS_STRING(out);
    if (zero) {
        uint64_t pair[2] = {0, load(h + H_ZERO_PARENT)};
        memcpy(w, pair, 16);
        w += 16;
    }
    for (uint64_t i = 0; i < cap; i++) {
        uint64_t *s = slots + i * SLOT_WORDS;
        if (s[S_FP] != 0) {
            uint64_t pair[2] = {s[S_FP], s[S_PARENT]};
            memcpy(w, pair, 16);
            w += 16;
        }
    }
    return out;
}

/* absorb(buffer): enter the pairs of a buffer laid out as pairs() writes them, each with key 0
 * (below every key a search offers, so no state of the buffer is won again) and its parent: the
 * visited states of a resumed parallel search. Grows as it needs; only while no other process
 * uses the table. */
static PyObject *
table_absorb(FingerprintTable *self, PyObject *arg)
{
    Py_buffer view;
    if (check_mapped(self) < 0 || PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (view.len % 16 != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "absorb() takes whole 16-byte pairs");
        return NULL;
    }
    const char *p = view.buf;
    for (Py_ssize_t j = 0; j < view.len / 16; j++, p += 16) {
        uint64_t pair[2];
        memcpy(pair, p, 16);
        while (claim(self, pair[0], 0) < 0) {
            PyObject *grown = table_grow(self, NULL);
            if (grown == NULL) {
                PyBuffer_Release(&view);
                return NULL;
            }
            Py_DECREF(grown);
        }
        entry_words(self, pair[0])[1] = pair[1];
    }
    PyBuffer_Release(&view);
    flush_count(self);
    Py_RETURN_NONE;
}

/* A table is one mapping inherited by fork; a pickled copy would be a different table. */
static PyObject *
table_reduce(FingerprintTable *Py_UNUSED(self), PyObject *Py_UNUSED(ignored))
{
    PyErr_SetString(PyExc_TypeError, "a FingerprintTable is shared by fork, never pickled");
    return NULL;
}

static Py_ssize_t
table_len(FingerprintTable *self)
{
    if (check_mapped(self) < 0) {
        return -1;
    }
    flush_count(self);
    return (Py_ssize_t)load(self->base + H_COUNT);
}

static PyObject *
table_flush(FingerprintTable *self, PyObject *Py_UNUSED(ignored))
{
    if (check_mapped(self) < 0) {
        return NULL;
    }
    flush_count(self);
    Py_RETURN_NONE;
}

static PyObject *
table_get_capacity(FingerprintTable *self, void *Py_UNUSED(closure))
{
    if (check_mapped(self) < 0) {
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(load(self->base + H_CAPACITY));
}

static PyObject *
table_get_reserved(FingerprintTable *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(self->reserved);
}

static PyObject *
table_get_nbytes(FingerprintTable *self, void *Py_UNUSED(closure))
{
    if (check_mapped(self) < 0) {
        return NULL;
    }
    uint64_t cap = load(self->base + H_CAPACITY);
    return PyLong_FromUnsignedLongLong((cap * SLOT_WORDS + HEADER_WORDS) * sizeof(uint64_t));
}

static void
table_unmap(FingerprintTable *self)
{
    if (self->base != NULL) {
        munmap(self->base, self->mapped);
        self->base = NULL;
        self->mapped = 0;
        self->reserved = 0;
    }
}

static Py_ssize_t
round_up(Py_ssize_t n)
{
    Py_ssize_t p = MIN_SLOTS;
    while (p < n && p < MOST_SLOTS) {
        p *= 2;
    }
    return p;
}

static int
table_init(FingerprintTable *self, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"max_slots", "initial_slots", NULL};
    Py_ssize_t max_slots, initial_slots = (Py_ssize_t)1 << 16;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n|n", names, &max_slots, &initial_slots)) {
        return -1;
    }
    if (max_slots < 1) {
        PyErr_SetString(PyExc_ValueError, "max_slots must be positive");
        return -1;
    }
    self->unflushed = 0;
    self->nkept = 0;
    initial_slots = round_up(initial_slots);
    max_slots = round_up(max_slots);
    if (max_slots < initial_slots) {
        PyErr_Format(PyExc_ValueError, "max_slots (%zd rounded up) must be at least initial_slots (%zd)",
                     max_slots, initial_slots);
        return -1;
    }
    table_unmap(self);
    void *base = MAP_FAILED;
    size_t mapped = 0;
    for (; max_slots >= initial_slots; max_slots /= 2) {
        mapped = ((size_t)max_slots * SLOT_WORDS + HEADER_WORDS) * sizeof(uint64_t);
        base = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (base != MAP_FAILED) {
            break;
        }
    }
    if (base == MAP_FAILED) {
        PyErr_Format(PyExc_MemoryError, "could not reserve shared memory for a fingerprint table of %zd slots",
                     initial_slots);
        return -1;
    }
    self->base = base;
    self->mapped = mapped;
    self->reserved = max_slots;
    self->base[H_CAPACITY] = (uint64_t)initial_slots;
    self->base[H_ZERO_KEY] = EMPTY_KEY;
    init_slots(slots_of(self), (size_t)initial_slots);
    return 0;
}

static void
table_dealloc(FingerprintTable *self)
{
    PyMem_Free(self->kept);
    table_unmap(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef table_methods[] = {
    {"claim", (PyCFunction)(void (*)(void))table_claim, METH_FASTCALL,
     "claim(fp, base, index[, parent]): offer key base | index for fp; 1 if it is now the smallest, 0 if not, "
     "-1 if the table wants growth (nothing done); with a parent, a successful claim is kept for settle_kept()"},
    {"prefetch", (PyCFunction)table_prefetch, METH_O,
     "prefetch(fp): start fetching fp's slot for a claim() soon after (an answer-free hint)"},
    {"settle", (PyCFunction)(void (*)(void))table_settle, METH_FASTCALL,
     "settle(fp, key, parent): store parent if key is fp's stored key; whether it was"},
    {"settle_kept", (PyCFunction)table_settle_kept, METH_NOARGS,
     "settle_kept(): settle every claim this process kept (claim's parent argument), in order, and forget them; "
     "(a byte per claim, 1 for a winner; the winners' keys as int64 words; their fingerprints)"},
    {"ranks_in_level", (PyCFunction)(void (*)(void))table_ranks_in_level, METH_FASTCALL | METH_STATIC,
     "ranks_in_level(keys, runs): for each of the sorted int64 keys, how many keys of the sorted int64 runs "
     "are smaller (each key must be in one run)"},
    {"entry", (PyCFunction)table_entry, METH_O, "entry(fp): (key, parent) of fp, or None"},
    {"key_of", (PyCFunction)table_key_of, METH_O, "key_of(fp): the stored key of fp, or None"},
    {"flush", (PyCFunction)table_flush, METH_NOARGS,
     "flush(): add the entries this process inserted to the shared count (claims count in batches)"},
    {"wants_growth", (PyCFunction)table_wants_growth, METH_NOARGS,
     "wants_growth(): whether claims refuse until grow() is called"},
    {"grow", (PyCFunction)table_grow, METH_NOARGS,
     "grow(): double the capacity and rehash; only while no other process uses the table"},
    {"pairs", (PyCFunction)table_pairs, METH_NOARGS,
     "pairs(): every (fingerprint, parent) as two native 64-bit words, an initial state its own parent"},
    {"absorb", (PyCFunction)table_absorb, METH_O,
     "absorb(buffer): enter the pairs of a buffer written by pairs(), each with key 0 and its parent"},
    {"__reduce__", (PyCFunction)table_reduce, METH_NOARGS, "refused: the table is shared by fork"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef table_getset[] = {
    {"capacity", (getter)table_get_capacity, NULL, "slots in use", NULL},
    {"reserved", (getter)table_get_reserved, NULL, "slots the shared mapping has room for", NULL},
    {"nbytes", (getter)table_get_nbytes, NULL, "bytes in use: the header and capacity slots", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods table_as_sequence = {
    .sq_length = (lenfunc)table_len,
};

static PyTypeObject FingerprintTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "isrcheck.engine._fptable.FingerprintTable",
    .tp_doc = PyDoc_STR("FingerprintTable(max_slots, initial_slots=65536): fingerprints with their smallest "
                        "discovery key and parent, in memory shared by forked processes"),
    .tp_basicsize = sizeof(FingerprintTable),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)table_init,
    .tp_dealloc = (destructor)table_dealloc,
    .tp_methods = table_methods,
    .tp_getset = table_getset,
    .tp_as_sequence = &table_as_sequence,
};

static struct PyModuleDef fptable_module = {
    PyModuleDef_HEAD_INIT, "_fptable", "A fingerprint table shared by forked processes, in C.", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__fptable(void)
{
    for (int i = 0; i < 3; i++) {
        if (small[i] == NULL && (small[i] = PyLong_FromLong(i - 1)) == NULL) {
            return NULL;
        }
    }
    return module_with_type(&fptable_module, &FingerprintTableType);
}
