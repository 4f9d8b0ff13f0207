/* PeerCanon: the symmetric fingerprint of a peer state (peers/kafka_specification/model.py), in C.
 *
 * Under SYMMETRY the checker hashes every successor's representative, ``hash(canonical(s))``:
 * signatures, a sort, one renaming (a few when signatures tie) and the hash of the renamed state.
 * In the compiled build that was about a third of a symmetric search, most of it allocating the
 * renamed tuples only to hash them and throw them away. This computes the very same number
 * without building anything: it reads the state's ints once, computes the signatures as
 * model.py's ``_signatures`` does (the same int, in 128 bits), sorts the replicas the same way
 * (a stable insertion sort), picks among tied renamings the least as Python's tuple comparison
 * would, and hashes the renaming as Python's tuple and int hashes (3.11) would hash the tuple
 * ``_rename`` builds. Equal numbers, so equal counts, orbits and traces: tests compare it with
 * the Python path (``hash(model.canonical(s))``) on every reachable state of small runs.
 *
 * A state it cannot read exactly (a value outside the bounds below) gives None, and the caller
 * falls back to the Python path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../../engine/_module.h"

#if SIZEOF_PY_UHASH_T != 8
#error "PeerCanon assumes 64-bit hashes"
#endif

#define XXPRIME_1 ((Py_uhash_t)11400714785074694791ULL)
#define XXPRIME_2 ((Py_uhash_t)14029467366897019727ULL)
#define XXPRIME_5 ((Py_uhash_t)2870177450012600261ULL)
#define XXROTATE(x) (((x) << 31) | ((x) >> 33))
#define MODULUS (((Py_uhash_t)1 << 61) - 1)

#define MAX_N 4        /* model.py's MAX_REPLICAS */
#define MAX_PERMS 24   /* MAX_N! */
#define MAX_LOG 4      /* longest log read; the 128-bit signature holds 4 records of 20 bits */
#define MAX_REQS 1024  /* requests (max_leader_epoch + 1, at most 1001) */
#define REC_BITS 20    /* model.py's _RECORD_BITS */
#define REQ_SHIFT 8
#define FIELDS 9       /* PeerState's fields */

static inline Py_uhash_t
acc_add(Py_uhash_t acc, Py_uhash_t lane)
{
    acc += lane * XXPRIME_2;
    acc = XXROTATE(acc);
    return acc * XXPRIME_1;
}

static inline Py_uhash_t
acc_end(Py_uhash_t acc, Py_ssize_t len)
{
    acc += (Py_uhash_t)len ^ (XXPRIME_5 ^ 3527539UL);
    if (acc == (Py_uhash_t)-1) {
        return 1546275796;
    }
    return acc;
}

/* hash(v) of the Python int v, as Python computes it: v itself below the modulus in magnitude
 * (every value of a peer state; -1 hashes as -2), without the 64-bit division of the general
 * case, which would cost more than the rest of a lane. */
static inline Py_uhash_t
int_lane(long v)
{
    if (v > -(1L << 60) && v < (1L << 60)) {
        return (Py_uhash_t)(v == -1 ? -2 : v);
    }
    int negative = v < 0;
    Py_uhash_t magnitude = negative ? (Py_uhash_t)0 - (Py_uhash_t)v : (Py_uhash_t)v;
    Py_hash_t r = (Py_hash_t)(magnitude % MODULUS);
    if (negative) {
        r = -r;
    }
    if (r == -1) {
        r = -2;
    }
    return (Py_uhash_t)r;
}

typedef struct {
    PyObject_HEAD
    int n;
    int log_size;
    int nperms;
    int q[MAX_PERMS][MAX_N];  /* permutation k: new index -> old index (itertools.permutations order) */
    int p[MAX_PERMS][MAX_N];  /* its inverse: old -> new */
    int by_code[256];         /* q as base-n digits -> k */
} PeerCanon;

/* One state's ints, read once. */
typedef struct {
    long len[MAX_N];
    long rec[MAX_N][MAX_LOG];
    Py_uhash_t log_hash[MAX_N];
    long hw[MAX_N], ep[MAX_N], ld[MAX_N], isr[MAX_N];
    Py_uhash_t next_record_hash;
    long ql, qi;
    Py_ssize_t nreq;
    long req[MAX_REQS];
} Flat;

static int
next_permutation(int *a, int n)
{
    int i = n - 2;
    while (i >= 0 && a[i] >= a[i + 1]) {
        i--;
    }
    if (i < 0) {
        return 0;
    }
    int j = n - 1;
    while (a[j] <= a[i]) {
        j--;
    }
    int t = a[i]; a[i] = a[j]; a[j] = t;
    for (int l = i + 1, r = n - 1; l < r; l++, r--) {
        t = a[l]; a[l] = a[r]; a[r] = t;
    }
    return 1;
}

static int
canon_init(PeerCanon *self, PyObject *args, PyObject *kwds)
{
    int n, log_size;
    if (!PyArg_ParseTuple(args, "ii", &n, &log_size)) {
        return -1;
    }
    if (n < 1 || n > MAX_N || log_size < 1 || log_size > MAX_LOG) {
        PyErr_Format(PyExc_ValueError, "PeerCanon: need 1 <= replicas <= %d and 1 <= log_size <= %d", MAX_N,
                     MAX_LOG);
        return -1;
    }
    self->n = n;
    self->log_size = log_size;
    int a[MAX_N];
    for (int i = 0; i < n; i++) {
        a[i] = i;
    }
    int k = 0;
    do {  /* lexicographic order: itertools.permutations(range(n))'s */
        int code = 0;
        for (int j = 0; j < n; j++) {
            self->q[k][j] = a[j];
            self->p[k][a[j]] = j;
            code = code * n + a[j];
        }
        self->by_code[code] = k;
        k++;
    } while (next_permutation(a, n));
    self->nperms = k;
    return 0;
}

/* Read item i of tuple t as a C long in [lo, hi]; 0 when it is not such an int. Every value of a
 * peer state is a small int, one 30-bit digit at most, read from the object without a call. */
static inline int
read_long(PyObject *t, Py_ssize_t i, long lo, long hi, long *out)
{
    PyObject *x = PyTuple_GET_ITEM(t, i);
    if (!PyLong_CheckExact(x)) {
        return 0;
    }
    long v;
#if PY_VERSION_HEX < 0x030C0000  /* 3.11's int layout: a signed digit count, then 30-bit digits */
    Py_ssize_t size = Py_SIZE(x);
    if (size == 0) {
        v = 0;
    }
    else if (size == 1) {
        v = (long)((PyLongObject *)x)->ob_digit[0];
    }
    else if (size == -1) {
        v = -(long)((PyLongObject *)x)->ob_digit[0];
    }
    else
#endif
    {
        int overflow;
        v = PyLong_AsLongAndOverflow(x, &overflow);
        if (overflow) {
            return 0;
        }
        if (v == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
    }
    if (v < lo || v > hi) {
        return 0;
    }
    *out = v;
    return 1;
}

static inline int
int_tuple(PyObject *t, Py_ssize_t size)
{
    return PyTuple_Check(t) && PyTuple_GET_SIZE(t) == size;
}

/* Fill f from the state; 0 when the state is not one this reads exactly (then the caller falls
 * back to Python), -1 with an exception on an error. */
static int
flatten(PeerCanon *self, PyObject *s, Flat *f)
{
    int n = self->n;
    if (!PyTuple_Check(s) || PyTuple_GET_SIZE(s) != FIELDS) {
        return 0;
    }
    PyObject *logs = PyTuple_GET_ITEM(s, 0);
    PyObject *hw = PyTuple_GET_ITEM(s, 1), *ep = PyTuple_GET_ITEM(s, 2), *ld = PyTuple_GET_ITEM(s, 3),
             *isr = PyTuple_GET_ITEM(s, 4), *reqs = PyTuple_GET_ITEM(s, 8);
    if (!int_tuple(logs, n) || !int_tuple(hw, n) || !int_tuple(ep, n) || !int_tuple(ld, n) || !int_tuple(isr, n)
        || !PyTuple_Check(reqs) || PyTuple_GET_SIZE(reqs) > MAX_REQS) {
        return 0;
    }
    long mask_hi = (1L << n) - 1;
    for (int i = 0; i < n; i++) {
        PyObject *log = PyTuple_GET_ITEM(logs, i);
        if (!PyTuple_Check(log) || PyTuple_GET_SIZE(log) > self->log_size) {
            return 0;
        }
        f->len[i] = PyTuple_GET_SIZE(log);
        Py_uhash_t acc = XXPRIME_5;  /* hash(log), from the records just read */
        for (Py_ssize_t o = 0; o < f->len[i]; o++) {
            if (!read_long(log, o, 0, (1L << REC_BITS) - 1, &f->rec[i][o])) {
                return 0;
            }
            acc = acc_add(acc, int_lane(f->rec[i][o]));
        }
        f->log_hash[i] = acc_end(acc, f->len[i]);
        /* hw * 2048 + ep + 1 is one digit of the signature in model.py: ep below 2047 keeps it so */
        if (!read_long(hw, i, 0, MAX_LOG, &f->hw[i]) || !read_long(ep, i, -1, 2046, &f->ep[i])
            || !read_long(ld, i, -1, n - 1, &f->ld[i]) || !read_long(isr, i, 0, mask_hi, &f->isr[i])) {
            return 0;
        }
    }
    Py_hash_t h = PyObject_Hash(PyTuple_GET_ITEM(s, 5));
    if (h == -1) {
        return -1;
    }
    f->next_record_hash = (Py_uhash_t)h;
    if (!read_long(s, 6, -1, n - 1, &f->ql) || !read_long(s, 7, 0, mask_hi, &f->qi)) {
        return 0;
    }
    f->nreq = PyTuple_GET_SIZE(reqs);
    for (Py_ssize_t e = 0; e < f->nreq; e++) {
        if (!read_long(reqs, e, 0, ((long)n + 1) << REQ_SHIFT | mask_hi, &f->req[e])) {
            return 0;
        }
        if ((f->req[e] >> REQ_SHIFT) > n || (f->req[e] & ((1L << REQ_SHIFT) - 1)) > mask_hi) {
            return 0;
        }
    }
    return 1;
}

static inline long
map_id(const int *p, long b)
{
    return b < 0 ? -1 : p[b];
}

static inline long
map_mask(const int *p, int n, long m)
{
    long out = 0;
    for (int i = 0; i < n; i++) {
        if (m >> i & 1) {
            out |= 1L << p[i];
        }
    }
    return out;
}

static inline long
map_req(const int *p, int n, long code)
{
    long ld = (code >> REQ_SHIFT) - 1;
    return map_mask(p, n, code & ((1L << REQ_SHIFT) - 1)) | ((ld >= 0 ? p[ld] + 1 : 0) << REQ_SHIFT);
}

static inline int
cmp_long(long a, long b)
{
    return a < b ? -1 : (a > b ? 1 : 0);
}

/* Python's comparison of the tuples _rename builds for permutations a and b: -1, 0 or 1. */
static int
compare(PeerCanon *self, const Flat *f, int a, int b)
{
    int n = self->n;
    const int *qa = self->q[a], *qb = self->q[b], *pa = self->p[a], *pb = self->p[b];
    int c;
    for (int j = 0; j < n; j++) {  /* logs: each a tuple, lexicographic then by length */
        int x = qa[j], y = qb[j];
        long common = f->len[x] < f->len[y] ? f->len[x] : f->len[y];
        for (long o = 0; o < common; o++) {
            if ((c = cmp_long(f->rec[x][o], f->rec[y][o])) != 0) {
                return c;
            }
        }
        if ((c = cmp_long(f->len[x], f->len[y])) != 0) {
            return c;
        }
    }
    for (int j = 0; j < n; j++) {
        if ((c = cmp_long(f->hw[qa[j]], f->hw[qb[j]])) != 0) {
            return c;
        }
    }
    for (int j = 0; j < n; j++) {
        if ((c = cmp_long(f->ep[qa[j]], f->ep[qb[j]])) != 0) {
            return c;
        }
    }
    for (int j = 0; j < n; j++) {
        if ((c = cmp_long(map_id(pa, f->ld[qa[j]]), map_id(pb, f->ld[qb[j]]))) != 0) {
            return c;
        }
    }
    for (int j = 0; j < n; j++) {
        if ((c = cmp_long(map_mask(pa, n, f->isr[qa[j]]), map_mask(pb, n, f->isr[qb[j]]))) != 0) {
            return c;
        }
    }
    if ((c = cmp_long(map_id(pa, f->ql), map_id(pb, f->ql))) != 0) {
        return c;
    }
    if ((c = cmp_long(map_mask(pa, n, f->qi), map_mask(pb, n, f->qi))) != 0) {
        return c;
    }
    for (Py_ssize_t e = 0; e < f->nreq; e++) {
        if ((c = cmp_long(map_req(pa, n, f->req[e]), map_req(pb, n, f->req[e]))) != 0) {
            return c;
        }
    }
    return 0;
}

/* hash() of the tuple _rename builds for permutation k. */
static Py_hash_t
renamed_hash(PeerCanon *self, const Flat *f, int k)
{
    int n = self->n;
    const int *q = self->q[k], *p = self->p[k];
    Py_uhash_t acc = XXPRIME_5, sub;
    sub = XXPRIME_5;
    for (int j = 0; j < n; j++) {
        sub = acc_add(sub, f->log_hash[q[j]]);
    }
    acc = acc_add(acc, acc_end(sub, n));
    sub = XXPRIME_5;
    for (int j = 0; j < n; j++) {
        sub = acc_add(sub, int_lane(f->hw[q[j]]));
    }
    acc = acc_add(acc, acc_end(sub, n));
    sub = XXPRIME_5;
    for (int j = 0; j < n; j++) {
        sub = acc_add(sub, int_lane(f->ep[q[j]]));
    }
    acc = acc_add(acc, acc_end(sub, n));
    sub = XXPRIME_5;
    for (int j = 0; j < n; j++) {
        sub = acc_add(sub, int_lane(map_id(p, f->ld[q[j]])));
    }
    acc = acc_add(acc, acc_end(sub, n));
    sub = XXPRIME_5;
    for (int j = 0; j < n; j++) {
        sub = acc_add(sub, int_lane(map_mask(p, n, f->isr[q[j]])));
    }
    acc = acc_add(acc, acc_end(sub, n));
    acc = acc_add(acc, f->next_record_hash);
    acc = acc_add(acc, int_lane(map_id(p, f->ql)));
    acc = acc_add(acc, int_lane(map_mask(p, n, f->qi)));
    sub = XXPRIME_5;
    for (Py_ssize_t e = 0; e < f->nreq; e++) {
        sub = acc_add(sub, int_lane(map_req(p, n, f->req[e])));
    }
    acc = acc_add(acc, acc_end(sub, f->nreq));
    return (Py_hash_t)acc_end(acc, FIELDS);
}

static PyObject *
canon_fingerprint(PeerCanon *self, PyObject *s)
{
    Flat f;
    int ok = flatten(self, s, &f);
    if (ok < 0) {
        return NULL;
    }
    if (ok == 0) {
        Py_RETURN_NONE;
    }
    int n = self->n;
    unsigned __int128 sig[MAX_N];
    int width = self->log_size + 1;
    for (int i = 0; i < n; i++) {  /* model.py's _signatures, digit by digit */
        long rel = f.ld[i] < 0 ? 0 : (f.ld[i] == i ? 1 : 2);
        long m = f.isr[i];
        unsigned __int128 key = (unsigned __int128)(f.hw[i] * 2048 + f.ep[i] + 1);
        key = key * 4 + rel;
        key = key * 8 + __builtin_popcountl((unsigned long)m);
        key = key * 2 + (m >> i & 1);
        key = key * 4 + (f.ql == i ? 2 : 0) + (f.qi >> i & 1);
        key = key * width + f.len[i];
        for (long o = 0; o < f.len[i]; o++) {
            key = (key << REC_BITS) | (unsigned __int128)f.rec[i][o];
        }
        sig[i] = key;
    }
    int order[MAX_N];
    for (int j = 0; j < n; j++) {
        order[j] = j;
    }
    for (int j = 1; j < n; j++) {  /* the same stable insertion sort as model.py's canonical */
        int x = order[j];
        int k = j - 1;
        while (k >= 0 && sig[order[k]] > sig[x]) {
            order[k + 1] = order[k];
            k--;
        }
        order[k + 1] = x;
    }
    int code = 0, tie = 0;
    for (int j = 0; j < n; j++) {
        code = code * n + order[j];
        if (j && sig[order[j - 1]] == sig[order[j]]) {
            tie = 1;
        }
    }
    int best;
    if (!tie) {
        best = self->by_code[code];
    }
    else {  /* the least of the renamings that list the replicas in signature order */
        best = -1;
        for (int k = 0; k < self->nperms; k++) {
            const int *q = self->q[k];
            int sorted = 1;
            for (int j = 0; j + 1 < n; j++) {
                if (sig[q[j]] > sig[q[j + 1]]) {
                    sorted = 0;
                    break;
                }
            }
            if (sorted && (best < 0 || compare(self, &f, k, best) < 0)) {
                best = k;
            }
        }
    }
    return PyLong_FromSsize_t(renamed_hash(self, &f, best));
}

static PyMethodDef canon_methods[] = {
    {"fingerprint", (PyCFunction)canon_fingerprint, METH_O,
     PyDoc_STR("fingerprint(state) -> hash(PeerModel.canonical(state)), or None when the state cannot be read "
               "exactly here")},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PeerCanonType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "isrcheck.peers.kafka_specification._canon.PeerCanon",
    .tp_doc = PyDoc_STR("PeerCanon(replicas, log_size): the peer model's symmetric fingerprint"),
    .tp_basicsize = sizeof(PeerCanon),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)canon_init,
    .tp_methods = canon_methods,
};

static struct PyModuleDef canon_module = {
    PyModuleDef_HEAD_INIT, "_canon", "The peer model's symmetric fingerprint, in C.", -1, NULL,
};

PyMODINIT_FUNC
PyInit__canon(void)
{
    return module_with_type(&canon_module, &PeerCanonType);
}
