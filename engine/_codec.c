/* CodecEngine: engine/codec.py's state codec program, run in C (see that module for the format).
 *
 * Why: a state moves between processes as bytes (the parallel workers even out their frontiers;
 * every Spark worker decodes each state it expands and encodes each successor it keeps), and the
 * program's interpreter compiled by mypyc costs about a step of the model to decode a state and
 * half of one to encode it. Here it costs a fraction of that.
 *
 * The engine is built from the tables StateCodec compiles from the schema (class programs, nodes,
 * classes, enums, fixed tuples, unions, minimum sizes) and gives the same answers: the same bytes
 * for every state, the same state (same classes, IntEnum members, bools, None) for every valid
 * encoding. It only knows success: whenever it meets something the format does not allow (a value
 * of the wrong type, a truncated or malformed encoding, an int beyond 64 bits, nesting deeper
 * than MAX_DEPTH) it answers None, and StateCodec runs its Python program on the same input, which
 * raises the one-line CodecError that says what is wrong (or, should the engine ever refuse
 * something valid, gives the right answer slowly). So the checks here must refuse at least what
 * the Python program refuses; tests/model/test_codec_engine.py compares both on every reachable
 * state of several models and on random and mutated bytes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "_module.h"

/* opcodes: engine/codec.py's OP_* (the same numbers) */
enum {
    OP_INT = 0, OP_BOOL = 1, OP_ENUM = 2, OP_INTS = 3, OP_ENUMS = 4, OP_STRUCT = 5, OP_OPT = 6,
    OP_SEQ = 7, OP_FIXED = 8, OP_UNION = 9, OP_EMPTY_OR = 10, OP_INTRUN = 11, OP_FIXINTS = 12,
    OP_SEQ_STRUCT = 13, OP_SEQ_INTS = 14, OP_SEQ_OPT_STRUCT = 15, OP_SEQ_FIXINTS = 16, OP_OPT_STRUCT = 17,
};

#define SHORT_MAX 0xE0
#define NEG_BASE 0xF0
#define MAX_DEPTH 64 /* deeper than any schema of the project; beyond it the Python program decides */

typedef struct {
    int32_t op, arg;
} Op;

typedef struct {
    Py_ssize_t start, len; /* a run of an int table */
} Span;

typedef struct {
    PyObject_HEAD
    PyObject *tables;        /* the constructor's arguments, kept alive (classes, enums, maps) */
    char *header;
    Py_ssize_t header_len;
    Py_ssize_t max_bytes;
    int root;
    Py_ssize_t nclasses, nnodes, nenums, nfixed, nunions;
    PyTypeObject **classes;  /* borrowed from tables */
    Py_ssize_t *nfields;     /* fields of each class */
    Span *progs;             /* per class: its ops in prog_ops */
    Op *prog_ops;
    Op *nodes;               /* per node: its specialised (op, arg) */
    Py_ssize_t *node_min;
    PyTypeObject **enum_types; /* borrowed */
    PyObject **enum_maps;    /* borrowed dicts: int -> member */
    Span *fixed;             /* per fixed tuple: its node ids in ints */
    Span *unions;            /* per union: its class indexes in ints */
    int32_t *ints;
} CodecEngine;

/* ------------------------------------------------------------------ encoding */

typedef struct {
    unsigned char *buf;
    Py_ssize_t len, cap;
} Out;

static int
out_reserve(Out *o, Py_ssize_t more)
{
    if (o->len + more <= o->cap) {
        return 0;
    }
    Py_ssize_t cap = o->cap ? o->cap : 256;
    while (cap < o->len + more) {
        cap *= 2;
    }
    unsigned char *grown = PyMem_Realloc(o->buf, (size_t)cap);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->buf = grown;
    o->cap = cap;
    return 0;
}

/* 1 on success, 0 when the value cannot be encoded (the Python program says why), -1 on error. */
#define TRY(x) do { int _r = (x); if (_r <= 0) return _r; } while (0)

static int
put_byte(Out *o, unsigned v)
{
    if (out_reserve(o, 1) < 0) {
        return -1;
    }
    o->buf[o->len++] = (unsigned char)v;
    return 1;
}

static int
put_long(Out *o, long long x)
{
    if (x >= 0 && x < SHORT_MAX) {
        return put_byte(o, (unsigned)x);
    }
    if (x >= -16 && x < 0) {
        return put_byte(o, (unsigned)(x + NEG_BASE));
    }
    unsigned long long mag = x >= 0 ? (unsigned long long)x : ~(unsigned long long)x;
    int bits = 0;
    while (mag) {
        bits++;
        mag >>= 1;
    }
    int n = (bits + 8) / 8;
    if (out_reserve(o, n + 1) < 0) {
        return -1;
    }
    o->buf[o->len++] = (unsigned char)(NEG_BASE + n);
    unsigned long long u = (unsigned long long)x;
    for (int k = 0; k < n; k++) {
        o->buf[o->len++] = (unsigned char)(u >> (8 * k));
    }
    return 1;
}

/* An exact int (not a bool, not an IntEnum member) of at most 64 bits. */
static int
put_int(Out *o, PyObject *x)
{
    if (!PyLong_CheckExact(x)) {
        return 0;
    }
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
    if (overflow) {
        return 0;
    }
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    return put_long(o, v);
}

static int
put_ints(Out *o, PyObject *t)
{
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    TRY(put_long(o, n));
    for (Py_ssize_t k = 0; k < n; k++) {
        TRY(put_int(o, PyTuple_GET_ITEM(t, k)));
    }
    return 1;
}

static int
put_bool(Out *o, PyObject *x)
{
    if (x == Py_True) {
        return put_byte(o, 1);
    }
    return x == Py_False ? put_byte(o, 0) : 0;
}

static int
put_enum(CodecEngine *e, Out *o, int ei, PyObject *x)
{
    if (Py_TYPE(x) != e->enum_types[ei] && !PyLong_CheckExact(x)) {
        return 0;
    }
    int has = PyDict_Contains(e->enum_maps[ei], x);
    if (has <= 0) {
        return has;
    }
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
    if (overflow) {
        return 0;
    }
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    return put_long(o, v);
}

static int enc_node(CodecEngine *e, Out *o, int nid, PyObject *x, int depth);

static int
enc_struct(CodecEngine *e, Out *o, int ci, PyObject *s, int depth)
{
    if (depth > MAX_DEPTH || Py_TYPE(s) != e->classes[ci] || PyTuple_GET_SIZE(s) != e->nfields[ci]) {
        return 0;
    }
    Span pr = e->progs[ci];
    Py_ssize_t i = 0;
    for (Py_ssize_t k = 0; k < pr.len; k++) {
        Op op = e->prog_ops[pr.start + k];
        if (op.op == OP_INTRUN) {
            for (int r = 0; r < op.arg; r++) {
                TRY(put_int(o, PyTuple_GET_ITEM(s, i + r)));
            }
            i += op.arg;
            continue;
        }
        PyObject *x = PyTuple_GET_ITEM(s, i);
        i++;
        switch (op.op) {
        case OP_INT:
            TRY(put_int(o, x));
            break;
        case OP_STRUCT:
            TRY(enc_struct(e, o, op.arg, x, depth + 1));
            break;
        case OP_INTS:
            if (!PyTuple_CheckExact(x)) {
                return 0;
            }
            TRY(put_ints(o, x));
            break;
        case OP_BOOL:
            TRY(put_bool(o, x));
            break;
        case OP_ENUM:
            TRY(put_enum(e, o, op.arg, x));
            break;
        default:
            TRY(enc_node(e, o, op.arg, x, depth + 1));
        }
    }
    return 1;
}

static int
enc_node(CodecEngine *e, Out *o, int nid, PyObject *x, int depth)
{
    if (depth > MAX_DEPTH) {
        return 0;
    }
    Op op = e->nodes[nid];
    int a = op.arg;
    switch (op.op) {
    case OP_SEQ_STRUCT:
    case OP_SEQ_OPT_STRUCT:
    case OP_SEQ_INTS:
    case OP_SEQ_FIXINTS:
    case OP_SEQ:
    case OP_ENUMS: {
        if (!PyTuple_CheckExact(x)) {
            return 0;
        }
        Py_ssize_t n = PyTuple_GET_SIZE(x);
        TRY(put_long(o, n));
        for (Py_ssize_t k = 0; k < n; k++) {
            PyObject *y = PyTuple_GET_ITEM(x, k);
            switch (op.op) {
            case OP_SEQ_STRUCT:
                TRY(enc_struct(e, o, a, y, depth + 1));
                break;
            case OP_SEQ_OPT_STRUCT:
                if (y == Py_None) {
                    TRY(put_byte(o, 0));
                } else {
                    TRY(put_byte(o, 1));
                    TRY(enc_struct(e, o, a, y, depth + 1));
                }
                break;
            case OP_SEQ_INTS:
                if (!PyTuple_CheckExact(y)) {
                    return 0;
                }
                TRY(put_ints(o, y));
                break;
            case OP_SEQ_FIXINTS:
                if (!PyTuple_CheckExact(y) || PyTuple_GET_SIZE(y) != a) {
                    return 0;
                }
                for (int j = 0; j < a; j++) {
                    TRY(put_int(o, PyTuple_GET_ITEM(y, j)));
                }
                break;
            case OP_SEQ:
                TRY(enc_node(e, o, a, y, depth + 1));
                break;
            default: /* OP_ENUMS */
                TRY(put_enum(e, o, a, y));
            }
        }
        return 1;
    }
    case OP_STRUCT:
        return enc_struct(e, o, a, x, depth + 1);
    case OP_OPT_STRUCT:
        if (x == Py_None) {
            return put_byte(o, 0);
        }
        TRY(put_byte(o, 1));
        return enc_struct(e, o, a, x, depth + 1);
    case OP_FIXINTS:
        if (!PyTuple_CheckExact(x) || PyTuple_GET_SIZE(x) != a) {
            return 0;
        }
        for (int j = 0; j < a; j++) {
            TRY(put_int(o, PyTuple_GET_ITEM(x, j)));
        }
        return 1;
    case OP_OPT:
        if (x == Py_None) {
            return put_byte(o, 0);
        }
        TRY(put_byte(o, 1));
        return enc_node(e, o, a, x, depth + 1);
    case OP_INTS:
        if (!PyTuple_CheckExact(x)) {
            return 0;
        }
        return put_ints(o, x);
    case OP_UNION: {
        Span u = e->unions[a];
        for (Py_ssize_t t = 0; t < u.len; t++) {
            int ci = e->ints[u.start + t];
            if (Py_TYPE(x) == e->classes[ci]) {
                TRY(put_byte(o, (unsigned)t));
                return enc_struct(e, o, ci, x, depth + 1);
            }
        }
        return 0;
    }
    case OP_FIXED: {
        Span f = e->fixed[a];
        if (!PyTuple_CheckExact(x) || PyTuple_GET_SIZE(x) != f.len) {
            return 0;
        }
        for (Py_ssize_t k = 0; k < f.len; k++) {
            TRY(enc_node(e, o, e->ints[f.start + k], PyTuple_GET_ITEM(x, k), depth + 1));
        }
        return 1;
    }
    case OP_EMPTY_OR:
        if (PyTuple_CheckExact(x) && PyTuple_GET_SIZE(x) == 0) {
            return put_byte(o, 0);
        }
        TRY(put_byte(o, 1));
        return enc_node(e, o, a, x, depth + 1);
    case OP_INT:
        return put_int(o, x);
    case OP_BOOL:
        return put_bool(o, x);
    case OP_ENUM:
        return put_enum(e, o, a, x);
    default:
        return 0;
    }
}

/* encode(state): the bytes, or None when the Python program must say what is wrong. */
static PyObject *
engine_encode(CodecEngine *e, PyObject *state)
{
    Out o = {NULL, 0, 0};
    int r = out_reserve(&o, 256);
    if (r == 0) {
        memcpy(o.buf, e->header, (size_t)e->header_len);
        o.len = e->header_len;
        r = enc_struct(e, &o, e->root, state, 0);
    }
    PyObject *result = NULL;
    if (r > 0) {
        result = PyBytes_FromStringAndSize((const char *)o.buf, o.len);
    } else if (r == 0) {
        result = Py_NewRef(Py_None);
    }
    PyMem_Free(o.buf);
    return result;
}

/* ------------------------------------------------------------------ decoding */

typedef struct {
    const unsigned char *d;
    Py_ssize_t n, p;
} In;

/* Each reader: 1 with *out set (a new reference), 0 for an invalid encoding, -1 on error. */

static int
get_long(In *in, long long *out)
{
    if (in->p >= in->n) {
        return 0;
    }
    unsigned w = in->d[in->p++];
    if (w < SHORT_MAX) {
        *out = (long long)w;
        return 1;
    }
    if (w < NEG_BASE) {
        *out = (long long)w - NEG_BASE;
        return 1;
    }
    int n = (int)w - NEG_BASE;
    if (n < 1 || n > 8 || in->p + n > in->n) {
        return 0;
    }
    unsigned long long u = 0;
    for (int k = 0; k < n; k++) {
        u |= (unsigned long long)in->d[in->p + k] << (8 * k);
    }
    if (n < 8 && (u >> (8 * n - 1)) & 1) { /* sign-extend */
        u |= ~0ULL << (8 * n);
    }
    in->p += n;
    long long x = (long long)u;
    if (x >= -16 && x < SHORT_MAX) {
        return 0; /* non-canonical: it has a shorter form */
    }
    unsigned long long mag = x >= 0 ? (unsigned long long)x : ~(unsigned long long)x;
    int bits = 0;
    while (mag) {
        bits++;
        mag >>= 1;
    }
    if ((bits + 8) / 8 != n) {
        return 0;
    }
    *out = x;
    return 1;
}

static int
get_int(In *in, PyObject **out)
{
    long long v;
    int r = get_long(in, &v);
    if (r <= 0) {
        return r;
    }
    *out = PyLong_FromLongLong(v);
    return *out == NULL ? -1 : 1;
}

/* A length whose items take at least min_item bytes each: refused past the remaining bytes. */
static int
get_len(CodecEngine *e, In *in, Py_ssize_t min_item, Py_ssize_t *out)
{
    long long v;
    int r = get_long(in, &v);
    if (r <= 0) {
        return r;
    }
    if (v < 0 || v > e->max_bytes || v * min_item > in->n - in->p) {
        return 0;
    }
    *out = (Py_ssize_t)v;
    return 1;
}

static int
get_tag(In *in, unsigned *out)
{
    if (in->p >= in->n) {
        return 0;
    }
    *out = in->d[in->p++];
    return 1;
}

static int
get_bool(In *in, PyObject **out)
{
    unsigned w;
    int r = get_tag(in, &w);
    if (r <= 0) {
        return r;
    }
    if (w > 1) {
        return 0;
    }
    *out = Py_NewRef(w ? Py_True : Py_False);
    return 1;
}

static int
get_ints(CodecEngine *e, In *in, Py_ssize_t count, int counted, PyObject **out)
{
    Py_ssize_t n = count;
    if (counted) {
        int r = get_len(e, in, 1, &n);
        if (r <= 0) {
            return r;
        }
    }
    PyObject *t = PyTuple_New(n);
    if (t == NULL) {
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *x;
        int r = get_int(in, &x);
        if (r <= 0) {
            Py_DECREF(t);
            return r;
        }
        PyTuple_SET_ITEM(t, k, x);
    }
    *out = t;
    return 1;
}

static int
get_enum(CodecEngine *e, In *in, int ei, PyObject **out)
{
    long long v;
    int r = get_long(in, &v);
    if (r <= 0) {
        return r;
    }
    PyObject *key = PyLong_FromLongLong(v);
    if (key == NULL) {
        return -1;
    }
    PyObject *m = PyDict_GetItemWithError(e->enum_maps[ei], key);
    Py_DECREF(key);
    if (m == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    *out = Py_NewRef(m);
    return 1;
}

static int dec_node(CodecEngine *e, In *in, int nid, PyObject **out, int depth);

static int
dec_struct(CodecEngine *e, In *in, int ci, PyObject **out, int depth)
{
    if (depth > MAX_DEPTH) {
        return 0;
    }
    PyTypeObject *cls = e->classes[ci];
    Py_ssize_t nf = e->nfields[ci];
    PyObject *s = cls->tp_alloc(cls, nf); /* as tuple.__new__(cls, ...): tracked, items NULL */
    if (s == NULL) {
        return -1;
    }
    Span pr = e->progs[ci];
    Py_ssize_t i = 0;
    int r = 1;
    for (Py_ssize_t k = 0; k < pr.len && r > 0; k++) {
        Op op = e->prog_ops[pr.start + k];
        PyObject *x = NULL;
        switch (op.op) {
        case OP_INTRUN:
            for (int j = 0; j < op.arg && r > 0; j++) {
                r = get_int(in, &x);
                if (r > 0) {
                    PyTuple_SET_ITEM(s, i++, x);
                }
            }
            continue;
        case OP_INT:
            r = get_int(in, &x);
            break;
        case OP_STRUCT:
            r = dec_struct(e, in, op.arg, &x, depth + 1);
            break;
        case OP_INTS:
            if (in->p < in->n && in->d[in->p] == 0) {
                in->p++;
                x = PyTuple_New(0);
                r = x == NULL ? -1 : 1;
            } else {
                r = get_ints(e, in, 0, 1, &x);
            }
            break;
        case OP_BOOL:
            r = get_bool(in, &x);
            break;
        case OP_ENUM:
            r = get_enum(e, in, op.arg, &x);
            break;
        default:
            r = dec_node(e, in, op.arg, &x, depth + 1);
        }
        if (r > 0) {
            PyTuple_SET_ITEM(s, i++, x);
        }
    }
    if (r <= 0 || i != nf) {
        Py_DECREF(s);
        return r <= 0 ? r : 0;
    }
    *out = s;
    return 1;
}

static int
dec_seq_item(CodecEngine *e, In *in, Op op, PyObject **out, int depth)
{
    int a = op.arg;
    switch (op.op) {
    case OP_SEQ_STRUCT:
        return dec_struct(e, in, a, out, depth + 1);
    case OP_SEQ_OPT_STRUCT: {
        unsigned w;
        int r = get_tag(in, &w);
        if (r <= 0) {
            return r;
        }
        if (w == 0) {
            *out = Py_NewRef(Py_None);
            return 1;
        }
        return w == 1 ? dec_struct(e, in, a, out, depth + 1) : 0;
    }
    case OP_SEQ_INTS:
        if (in->p < in->n && in->d[in->p] == 0) {
            in->p++;
            *out = PyTuple_New(0);
            return *out == NULL ? -1 : 1;
        }
        return get_ints(e, in, 0, 1, out);
    case OP_SEQ_FIXINTS:
        return get_ints(e, in, a, 0, out);
    case OP_SEQ:
        return dec_node(e, in, a, out, depth + 1);
    default: /* OP_ENUMS */
        return get_enum(e, in, a, out);
    }
}

static int
dec_node(CodecEngine *e, In *in, int nid, PyObject **out, int depth)
{
    if (depth > MAX_DEPTH) {
        return 0;
    }
    Op op = e->nodes[nid];
    int a = op.arg;
    int r;
    switch (op.op) {
    case OP_SEQ_STRUCT:
    case OP_SEQ_OPT_STRUCT:
    case OP_SEQ_INTS:
    case OP_SEQ_FIXINTS:
    case OP_SEQ:
    case OP_ENUMS: {
        /* the Python program bounds a length by the items' least size for OP_SEQ and by one byte
         * for the others; the same bound here */
        Py_ssize_t n;
        r = get_len(e, in, op.op == OP_SEQ ? e->node_min[a] : 1, &n);
        if (r <= 0) {
            return r;
        }
        PyObject *t = PyTuple_New(n);
        if (t == NULL) {
            return -1;
        }
        for (Py_ssize_t k = 0; k < n; k++) {
            PyObject *y;
            r = dec_seq_item(e, in, op, &y, depth);
            if (r <= 0) {
                Py_DECREF(t);
                return r;
            }
            PyTuple_SET_ITEM(t, k, y);
        }
        *out = t;
        return 1;
    }
    case OP_STRUCT:
        return dec_struct(e, in, a, out, depth + 1);
    case OP_OPT_STRUCT:
    case OP_OPT:
    case OP_EMPTY_OR: {
        unsigned w;
        r = get_tag(in, &w);
        if (r <= 0) {
            return r;
        }
        if (w == 0) {
            *out = op.op == OP_EMPTY_OR ? PyTuple_New(0) : Py_NewRef(Py_None);
            return *out == NULL ? -1 : 1;
        }
        if (w != 1) {
            return 0;
        }
        return op.op == OP_OPT_STRUCT ? dec_struct(e, in, a, out, depth + 1) : dec_node(e, in, a, out, depth + 1);
    }
    case OP_FIXINTS:
        return get_ints(e, in, a, 0, out);
    case OP_INTS:
        return get_ints(e, in, 0, 1, out);
    case OP_UNION: {
        unsigned tag;
        r = get_tag(in, &tag);
        if (r <= 0) {
            return r;
        }
        Span u = e->unions[a];
        if ((Py_ssize_t)tag >= u.len) {
            return 0;
        }
        return dec_struct(e, in, e->ints[u.start + tag], out, depth + 1);
    }
    case OP_FIXED: {
        Span f = e->fixed[a];
        PyObject *t = PyTuple_New(f.len);
        if (t == NULL) {
            return -1;
        }
        for (Py_ssize_t k = 0; k < f.len; k++) {
            PyObject *y;
            r = dec_node(e, in, e->ints[f.start + k], &y, depth + 1);
            if (r <= 0) {
                Py_DECREF(t);
                return r;
            }
            PyTuple_SET_ITEM(t, k, y);
        }
        *out = t;
        return 1;
    }
    case OP_INT:
        return get_int(in, out);
    case OP_BOOL:
        return get_bool(in, out);
    case OP_ENUM:
        return get_enum(e, in, a, out);
    default:
        return 0;
    }
}

/* decode(data): the state, or None when the Python program must say what is wrong (or data is
 * not exactly bytes). */
static PyObject *
engine_decode(CodecEngine *e, PyObject *data)
{
    if (!PyBytes_CheckExact(data)) {
        Py_RETURN_NONE;
    }
    In in = {(const unsigned char *)PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), e->header_len};
    if (in.n > e->max_bytes || in.n < e->header_len || memcmp(in.d, e->header, (size_t)e->header_len) != 0) {
        Py_RETURN_NONE;
    }
    PyObject *state = NULL;
    int r = dec_struct(e, &in, e->root, &state, 0);
    if (r < 0) {
        return NULL;
    }
    if (r == 0 || in.p != in.n) {
        Py_XDECREF(state);
        Py_RETURN_NONE;
    }
    return state;
}

/* ------------------------------------------------------------------ construction */

static int
as_int32(PyObject *o, int32_t *out, const char *what)
{
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (v < INT32_MIN || v > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "CodecEngine: %s out of range", what);
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

/* An (op, arg) pair. */
static int
as_op(PyObject *o, Op *out)
{
    if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != 2) {
        PyErr_SetString(PyExc_TypeError, "CodecEngine: an op is an (opcode, argument) pair");
        return -1;
    }
    return as_int32(PyTuple_GET_ITEM(o, 0), &out->op, "opcode") < 0
        || as_int32(PyTuple_GET_ITEM(o, 1), &out->arg, "argument") < 0 ? -1 : 0;
}

static int
check_list(PyObject *o, const char *what)
{
    if (!PyList_Check(o)) {
        PyErr_Format(PyExc_TypeError, "CodecEngine: %s must be a list", what);
        return -1;
    }
    return 0;
}

/* Lists of int lists (fixed tuples' nodes, unions' classes) into spans of e->ints. */
static int
fill_spans(PyObject *lists, Span *spans, Py_ssize_t *at, int32_t *ints, const char *what)
{
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(lists); k++) {
        PyObject *items = PyList_GET_ITEM(lists, k);
        if (check_list(items, what) < 0) {
            return -1;
        }
        spans[k].start = *at;
        spans[k].len = PyList_GET_SIZE(items);
        for (Py_ssize_t j = 0; j < spans[k].len; j++) {
            if (as_int32(PyList_GET_ITEM(items, j), &ints[(*at)++], what) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

static Py_ssize_t
total_len(PyObject *lists)
{
    Py_ssize_t n = 0;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(lists); k++) {
        PyObject *items = PyList_GET_ITEM(lists, k);
        n += PyList_Check(items) ? PyList_GET_SIZE(items) : 0;
    }
    return n;
}

static void
engine_free_tables(CodecEngine *e)
{
    PyMem_Free(e->header);
    PyMem_Free(e->classes);
    PyMem_Free(e->nfields);
    PyMem_Free(e->progs);
    PyMem_Free(e->prog_ops);
    PyMem_Free(e->nodes);
    PyMem_Free(e->node_min);
    PyMem_Free(e->enum_types);
    PyMem_Free(e->enum_maps);
    PyMem_Free(e->fixed);
    PyMem_Free(e->unions);
    PyMem_Free(e->ints);
    e->header = NULL;
    e->classes = NULL;
    e->nfields = NULL;
    e->progs = NULL;
    e->prog_ops = NULL;
    e->nodes = NULL;
    e->node_min = NULL;
    e->enum_types = NULL;
    e->enum_maps = NULL;
    e->fixed = NULL;
    e->unions = NULL;
    e->ints = NULL;
    Py_CLEAR(e->tables);
}

/* Every index the programs hold must name a table entry: checked once here, so that the
 * interpreters above never index out of range. */
static int
check_index(int32_t v, Py_ssize_t n, const char *what)
{
    if (v < 0 || v >= n) {
        PyErr_Format(PyExc_ValueError, "CodecEngine: %s index %d out of range", what, (int)v);
        return -1;
    }
    return 0;
}

static int
check_op(CodecEngine *e, Op op, int in_prog)
{
    switch (op.op) {
    case OP_INT: case OP_BOOL: case OP_INTS: case OP_SEQ_INTS:
        return 0;
    case OP_INTRUN:
        return in_prog && op.arg > 0 ? 0 : check_index(-1, 0, "run");
    case OP_ENUM: case OP_ENUMS:
        return check_index(op.arg, e->nenums, "enum");
    case OP_STRUCT: case OP_SEQ_STRUCT: case OP_SEQ_OPT_STRUCT: case OP_OPT_STRUCT:
        return check_index(op.arg, e->nclasses, "class");
    case OP_FIXINTS: case OP_SEQ_FIXINTS:
        return op.arg >= 0 ? 0 : check_index(op.arg, 0, "arity");
    case OP_OPT: case OP_SEQ: case OP_EMPTY_OR:
        return check_index(op.arg, e->nnodes, "node");
    case OP_FIXED:
        return check_index(op.arg, e->nfixed, "fixed tuple");
    case OP_UNION:
        return check_index(op.arg, e->nunions, "union");
    default:
        PyErr_Format(PyExc_ValueError, "CodecEngine: unknown opcode %d", (int)op.op);
        return -1;
    }
}

static int
engine_init(CodecEngine *e, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"header", "root", "progs", "nodes", "classes", "enum_types", "enum_maps",
                            "fixed", "unions", "node_min", "max_bytes", NULL};
    PyObject *header, *progs, *nodes, *classes, *enum_types, *enum_maps, *fixed, *unions, *node_min;
    int root;
    Py_ssize_t max_bytes;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "SiOOOOOOOOn:CodecEngine", names, &header, &root, &progs, &nodes,
                                     &classes, &enum_types, &enum_maps, &fixed, &unions, &node_min, &max_bytes)) {
        return -1;
    }
    engine_free_tables(e);
    if (check_list(progs, "progs") < 0 || check_list(nodes, "nodes") < 0 || check_list(classes, "classes") < 0
            || check_list(enum_types, "enum_types") < 0 || check_list(enum_maps, "enum_maps") < 0
            || check_list(fixed, "fixed") < 0 || check_list(unions, "unions") < 0
            || check_list(node_min, "node_min") < 0) {
        return -1;
    }
    e->nclasses = PyList_GET_SIZE(classes);
    e->nnodes = PyList_GET_SIZE(nodes);
    e->nenums = PyList_GET_SIZE(enum_types);
    e->nfixed = PyList_GET_SIZE(fixed);
    e->nunions = PyList_GET_SIZE(unions);
    if (PyList_GET_SIZE(progs) != e->nclasses || PyList_GET_SIZE(enum_maps) != e->nenums
            || PyList_GET_SIZE(node_min) != e->nnodes || root < 0 || root >= e->nclasses) {
        PyErr_SetString(PyExc_ValueError, "CodecEngine: the tables do not fit together");
        return -1;
    }
    e->tables = PyTuple_Pack(9, header, progs, nodes, classes, enum_types, enum_maps, fixed, unions, node_min);
    if (e->tables == NULL) {
        return -1;
    }
    e->root = root;
    e->max_bytes = max_bytes;
    e->header_len = PyBytes_GET_SIZE(header);
    Py_ssize_t nops = total_len(progs), nints = total_len(fixed) + total_len(unions);
    e->header = PyMem_Malloc((size_t)e->header_len + 1);
    e->classes = PyMem_Calloc((size_t)e->nclasses + 1, sizeof(PyTypeObject *));
    e->nfields = PyMem_Calloc((size_t)e->nclasses + 1, sizeof(Py_ssize_t));
    e->progs = PyMem_Calloc((size_t)e->nclasses + 1, sizeof(Span));
    e->prog_ops = PyMem_Calloc((size_t)nops + 1, sizeof(Op));
    e->nodes = PyMem_Calloc((size_t)e->nnodes + 1, sizeof(Op));
    e->node_min = PyMem_Calloc((size_t)e->nnodes + 1, sizeof(Py_ssize_t));
    e->enum_types = PyMem_Calloc((size_t)e->nenums + 1, sizeof(PyTypeObject *));
    e->enum_maps = PyMem_Calloc((size_t)e->nenums + 1, sizeof(PyObject *));
    e->fixed = PyMem_Calloc((size_t)e->nfixed + 1, sizeof(Span));
    e->unions = PyMem_Calloc((size_t)e->nunions + 1, sizeof(Span));
    e->ints = PyMem_Calloc((size_t)nints + 1, sizeof(int32_t));
    if (!e->header || !e->classes || !e->nfields || !e->progs || !e->prog_ops || !e->nodes || !e->node_min
            || !e->enum_types || !e->enum_maps || !e->fixed || !e->unions || !e->ints) {
        PyErr_NoMemory();
        goto fail;
    }
    memcpy(e->header, PyBytes_AS_STRING(header), (size_t)e->header_len);
    for (Py_ssize_t c = 0; c < e->nclasses; c++) {
        PyObject *cls = PyList_GET_ITEM(classes, c);
        if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &PyTuple_Type)) {
            PyErr_SetString(PyExc_TypeError, "CodecEngine: classes must be tuple subclasses");
            goto fail;
        }
        PyObject *fields = PyObject_GetAttrString(cls, "_fields");
        if (fields == NULL) {
            goto fail;
        }
        e->nfields[c] = PyTuple_Check(fields) ? PyTuple_GET_SIZE(fields) : -1;
        Py_DECREF(fields);
        if (e->nfields[c] < 0) {
            PyErr_SetString(PyExc_TypeError, "CodecEngine: a class's _fields must be a tuple");
            goto fail;
        }
        e->classes[c] = (PyTypeObject *)cls;
    }
    Py_ssize_t at = 0;
    for (Py_ssize_t c = 0; c < e->nclasses; c++) {
        PyObject *prog = PyList_GET_ITEM(progs, c);
        if (check_list(prog, "a class's program") < 0) {
            goto fail;
        }
        e->progs[c].start = at;
        e->progs[c].len = PyList_GET_SIZE(prog);
        Py_ssize_t fields = 0;
        for (Py_ssize_t k = 0; k < e->progs[c].len; k++, at++) {
            if (as_op(PyList_GET_ITEM(prog, k), &e->prog_ops[at]) < 0) {
                goto fail;
            }
            fields += e->prog_ops[at].op == OP_INTRUN ? e->prog_ops[at].arg : 1;
        }
        if (fields != e->nfields[c]) {
            PyErr_SetString(PyExc_ValueError, "CodecEngine: a class's program does not cover its fields");
            goto fail;
        }
    }
    for (Py_ssize_t k = 0; k < e->nnodes; k++) {
        long m;
        if (as_op(PyList_GET_ITEM(nodes, k), &e->nodes[k]) < 0
                || ((m = PyLong_AsLong(PyList_GET_ITEM(node_min, k))) == -1 && PyErr_Occurred())) {
            goto fail;
        }
        e->node_min[k] = m;
    }
    for (Py_ssize_t k = 0; k < e->nenums; k++) {
        PyObject *t = PyList_GET_ITEM(enum_types, k), *m = PyList_GET_ITEM(enum_maps, k);
        if (!PyType_Check(t) || !PyDict_Check(m)) {
            PyErr_SetString(PyExc_TypeError, "CodecEngine: enums are types with dict maps");
            goto fail;
        }
        e->enum_types[k] = (PyTypeObject *)t;
        e->enum_maps[k] = m;
    }
    at = 0;
    if (fill_spans(fixed, e->fixed, &at, e->ints, "fixed") < 0 || fill_spans(unions, e->unions, &at, e->ints, "unions") < 0) {
        goto fail;
    }
    for (Py_ssize_t c = 0; c < e->nclasses; c++) {
        for (Py_ssize_t k = 0; k < e->progs[c].len; k++) {
            Op op = e->prog_ops[e->progs[c].start + k];
            /* a program's composite fields name nodes; its leaves carry their own arguments */
            int leaf = op.op == OP_INT || op.op == OP_BOOL || op.op == OP_ENUM || op.op == OP_INTS
                || op.op == OP_INTRUN || op.op == OP_STRUCT;
            if (leaf ? check_op(e, op, 1) < 0 : check_index(op.arg, e->nnodes, "node") < 0) {
                goto fail;
            }
        }
    }
    for (Py_ssize_t k = 0; k < e->nnodes; k++) {
        if (check_op(e, e->nodes[k], 0) < 0) {
            goto fail;
        }
    }
    for (Py_ssize_t k = 0; k < e->nfixed; k++) {
        for (Py_ssize_t j = 0; j < e->fixed[k].len; j++) {
            if (check_index(e->ints[e->fixed[k].start + j], e->nnodes, "node") < 0) {
                goto fail;
            }
        }
    }
    for (Py_ssize_t k = 0; k < e->nunions; k++) {
        if (e->unions[k].len > 256) {
            PyErr_SetString(PyExc_ValueError, "CodecEngine: a union has more members than a tag byte");
            goto fail;
        }
        for (Py_ssize_t j = 0; j < e->unions[k].len; j++) {
            if (check_index(e->ints[e->unions[k].start + j], e->nclasses, "class") < 0) {
                goto fail;
            }
        }
    }
    return 0;
fail:
    engine_free_tables(e);
    return -1;
}

static void
engine_dealloc(CodecEngine *e)
{
    engine_free_tables(e);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

static PyObject *
engine_encode_method(CodecEngine *e, PyObject *state)
{
    if (e->classes == NULL) {
        PyErr_SetString(PyExc_ValueError, "the CodecEngine was never initialised");
        return NULL;
    }
    return engine_encode(e, state);
}

static PyObject *
engine_decode_method(CodecEngine *e, PyObject *data)
{
    if (e->classes == NULL) {
        PyErr_SetString(PyExc_ValueError, "the CodecEngine was never initialised");
        return NULL;
    }
    return engine_decode(e, data);
}

static PyMethodDef engine_methods[] = {
    {"encode", (PyCFunction)engine_encode_method, METH_O,
     "encode(state): the state's bytes, or None if it is not a state of the schema"},
    {"decode", (PyCFunction)engine_decode_method, METH_O,
     "decode(data): the state data encodes, or None if data is not exactly bytes of a valid encoding"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CodecEngineType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "isrcheck.engine._codec.CodecEngine",
    .tp_doc = PyDoc_STR("CodecEngine(header, root, progs, nodes, classes, enum_types, enum_maps, fixed, unions, "
                        "node_min, max_bytes): StateCodec's program run in C (see engine/codec.py)"),
    .tp_basicsize = sizeof(CodecEngine),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)engine_init,
    .tp_dealloc = (destructor)engine_dealloc,
    .tp_methods = engine_methods,
};

static struct PyModuleDef codec_module = {
    PyModuleDef_HEAD_INIT, "_codec", "engine/codec.py's state codec program, run in C.", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__codec(void)
{
    return module_with_type(&codec_module, &CodecEngineType);
}
