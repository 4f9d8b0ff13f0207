/* ParentMap: the single-process checker's fingerprint-to-parent map, flat (see engine/parentmap.py).
 *
 * Why in C: a dict of Python ints costs about 90 bytes a state (the dict's entry and index, plus a
 * 48-byte int object for every key) and three dependent cache misses for a lookup that hits (the
 * index, the entry, the key object the entry points to). This table is one array of 16-byte slots,
 * (fingerprint, parent fingerprint), open addressing with linear probing, grown by doubling at a
 * load of 3/4: 21-43 bytes a state, and one miss per lookup. Nothing else in it: no keys, no
 * sharing between processes (the parallel checker has engine/_fptable.c for that).
 *
 * It is a mapping, as the dict it replaces (``fp in m``, ``m[fp]``, ``m[fp] = parent``, ``len(m)``),
 * so the checker's code is the same for both and reaches these functions through the type's slots,
 * with no method lookup. Fingerprints are signed 64-bit ints; a parent is one, or None for an
 * initial state. Encoding: the fingerprint word 0 marks an empty slot (fingerprint 0 has a slot of
 * its own beside the array), and an initial state is stored as its own parent (a state is never
 * its own parent in a search tree, and storing that is refused).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "_fingerprints.h"
#include "_module.h"

#define INITIAL_SLOTS ((uint64_t)1024)

typedef struct {
    PyObject_HEAD
    uint64_t *slots;     /* capacity pairs (fingerprint, parent); fingerprint 0: empty */
    uint64_t capacity;   /* a power of two */
    uint64_t used;       /* non-zero fingerprints stored */
    int zero_present;    /* fingerprint 0 is stored */
    uint64_t zero_parent;
} ParentMap;

/* The slot of fp (non-zero): the one holding it, or the empty one where it would go. */
static inline uint64_t *
probe(uint64_t *slots, uint64_t capacity, uint64_t fp)
{
    uint64_t mask = capacity - 1;
    size_t i = home(fp, mask);
    for (;;) {
        uint64_t *s = slots + 2 * i;
        if (s[0] == fp || s[0] == 0) {
            return s;
        }
        i = (i + 1) & mask;
    }
}

static int
grow(ParentMap *self)
{
    uint64_t want = self->capacity ? self->capacity * 2 : INITIAL_SLOTS;
    if (want > ((uint64_t)PY_SSIZE_T_MAX) / 16) {
        PyErr_NoMemory();
        return -1;
    }
    /* calloc: large tables come zeroed from the kernel, page by page as they are touched */
    uint64_t *fresh = PyMem_RawCalloc((size_t)want, 2 * sizeof(uint64_t));
    if (fresh == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (uint64_t j = 0; j < self->capacity; j++) {
        uint64_t *old = self->slots + 2 * j;
        if (old[0] != 0) {
            uint64_t *s = probe(fresh, want, old[0]);
            s[0] = old[0];
            s[1] = old[1];
        }
    }
    PyMem_RawFree(self->slots);
    self->slots = fresh;
    self->capacity = want;
    return 0;
}

/* The parent word of fp, or NULL when fp is absent. */
static uint64_t *
lookup(ParentMap *self, uint64_t fp)
{
    if (fp == 0) {
        return self->zero_present ? &self->zero_parent : NULL;
    }
    if (self->capacity == 0) {
        return NULL;
    }
    uint64_t *s = probe(self->slots, self->capacity, fp);
    return s[0] == 0 ? NULL : s + 1;
}

static Py_ssize_t
map_length(ParentMap *self)
{
    return (Py_ssize_t)(self->used + (self->zero_present != 0));
}

static int
map_contains(ParentMap *self, PyObject *key)
{
    uint64_t fp;
    if (fp_arg(key, &fp) < 0) {
        return -1;
    }
    return lookup(self, fp) != NULL;
}

static PyObject *
map_subscript(ParentMap *self, PyObject *key)
{
    uint64_t fp;
    if (fp_arg(key, &fp) < 0) {
        return NULL;
    }
    uint64_t *parent = lookup(self, fp);
    if (parent == NULL) {
        PyErr_SetObject(PyExc_KeyError, key);
        return NULL;
    }
    if (*parent == fp) {
        Py_RETURN_NONE;
    }
    return PyLong_FromLongLong((long long)(int64_t)*parent);
}

/* Store fp -> parent (parent == fp: an initial state), growing the array at a load of 3/4. */
static int
insert(ParentMap *self, uint64_t fp, uint64_t parent)
{
    if (fp == 0) {
        self->zero_present = 1;
        self->zero_parent = parent;
        return 0;
    }
    if ((self->used + 1) * 4 > self->capacity * 3 && grow(self) < 0) {
        return -1;
    }
    uint64_t *s = probe(self->slots, self->capacity, fp);
    if (s[0] == 0) {
        s[0] = fp;
        self->used++;
    }
    s[1] = parent;
    return 0;
}

static int
map_ass_subscript(ParentMap *self, PyObject *key, PyObject *value)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "a ParentMap only grows: its entries cannot be deleted");
        return -1;
    }
    uint64_t fp, parent;
    if (fp_arg(key, &fp) < 0) {
        return -1;
    }
    if (value == Py_None) {
        parent = fp; /* an initial state */
    } else {
        if (fp_arg(value, &parent) < 0) {
            return -1;
        }
        if (parent == fp) {
            PyErr_SetString(PyExc_ValueError, "a state cannot be its own parent");
            return -1;
        }
    }
    return insert(self, fp, parent);
}

static PyObject *
map_get(ParentMap *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_Format(PyExc_TypeError, "get() takes 1 or 2 arguments (%zd given)", nargs);
        return NULL;
    }
    uint64_t fp;
    if (fp_arg(args[0], &fp) < 0) {
        return NULL;
    }
    uint64_t *parent = lookup(self, fp);
    if (parent == NULL) {
        PyObject *d = nargs == 2 ? args[1] : Py_None;
        Py_INCREF(d);
        return d;
    }
    if (*parent == fp) {
        Py_RETURN_NONE;
    }
    return PyLong_FromLongLong((long long)(int64_t)*parent);
}

/* pairs(): every entry as two native-endian 64-bit words (fingerprint, parent), an initial state
 * being its own parent, in slot order: the snapshot of engine/checkpoint.py, written without a
 * Python object per state. */
static PyObject *
map_pairs(ParentMap *self, PyObject *Py_UNUSED(ignored))
{
    Py_ssize_t n = map_length(self);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * 16);
    if (out == NULL) {
        return NULL;
    }
    uint64_t *w = (uint64_t *)PyBytes_AS_STRING(out);
    if (self->zero_present) {
        *w++ = 0;
        *w++ = self->zero_parent;
    }
    for (uint64_t j = 0; j < self->capacity; j++) {
        uint64_t *s = self->slots + 2 * j;
        if (s[0] != 0) {
            *w++ = s[0];
            *w++ = s[1];
        }
    }
    return out;
}

/* absorb(buffer): add the pairs of a buffer laid out as pairs() writes them (a resumed search). */
static PyObject *
map_absorb(ParentMap *self, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (view.len % 16 != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "absorb() takes whole 16-byte pairs");
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len / 16;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t pair[2];
        memcpy(pair, p + 16 * i, 16);
        if (insert(self, pair[0], pair[1]) < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

/* How many fingerprints ahead the bulk methods fetch the slot of (a few misses in flight). */
#define AHEAD 16

/* Ask the cache for the home slot of the fingerprint at `at` (8 bytes), which is read soon. */
static inline void
prefetch_slot(const ParentMap *self, const unsigned char *at)
{
    uint64_t fp;
    memcpy(&fp, at, 8);
    if (self->capacity != 0) {
        __builtin_prefetch(self->slots + 2 * home(fp, self->capacity - 1));
    }
}

/* A read-only view of a buffer of 8-byte words (an array('q'), or the bytes a worker sent). */
static int
word_view(PyObject *obj, Py_buffer *view, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (view->len % 8 != 0) {
        PyErr_Format(PyExc_ValueError, "%s must hold whole 8-byte words", what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* enumerate(fps, first): fps[i] -> first + i for every 8-byte fingerprint of the buffer, as
 * ``m[fp] = first + i`` one at a time would (a value equal to its key is refused the same way).
 * The liveness graph's index gets a parallel search's states in one call (engine/liveness.py,
 * GraphBuilder.assemble): millions of them, with no Python int made per state. */
static PyObject *
map_enumerate(ParentMap *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "enumerate(fps, first)");
        return NULL;
    }
    uint64_t first;
    if (fp_arg(args[1], &first) < 0) {
        return NULL;
    }
    Py_buffer view;
    if (word_view(args[0], &view, "fps") < 0) {
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len / 8;
    /* grown once to the capacity the inserts one by one would reach, then filled with the slots
     * of the fingerprints ahead fetched while the current one is stored (a random slot of a table
     * far larger than the caches is a miss each) */
    while ((self->used + (uint64_t)n) * 4 > self->capacity * 3) {
        if (grow(self) < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t fp;
        memcpy(&fp, p + 8 * i, 8);
        if (i + AHEAD < n) {
            prefetch_slot(self, p + 8 * (i + AHEAD));
        }
        uint64_t value = first + (uint64_t)i;
        if (value == fp) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_ValueError, "a state cannot be its own parent");
            return NULL;
        }
        if (insert(self, fp, value) < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

/* numbers(fps, base, out): out[i] = m[fps[i]] - base for every 8-byte fingerprint of the buffer,
 * into the 4-byte signed ints of ``out`` (an array('i') at least as long): the state numbers of a
 * worker's steps' ends, read back from the index enumerate() filled. KeyError for a fingerprint not
 * stored; ValueError for a value that is no number (an initial state's mark, or one outside
 * [base, base + 2**31)). */
static PyObject *
map_numbers(ParentMap *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "numbers(fps, base, out)");
        return NULL;
    }
    uint64_t base;
    if (fp_arg(args[1], &base) < 0) {
        return NULL;
    }
    Py_buffer in, out;
    if (word_view(args[0], &in, "fps") < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(args[2], &out, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&in);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = in.len / 8;
    if (out.itemsize != 4 || out.format == NULL || out.format[0] != 'i' || out.len / 4 < n) {
        PyErr_SetString(PyExc_ValueError, "out must be an array('i') at least as long as fps");
        goto done;
    }
    const unsigned char *p = (const unsigned char *)in.buf;
    int32_t *w = (int32_t *)out.buf;
    uint64_t last_fp = 0, *value = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t fp;
        memcpy(&fp, p + 8 * i, 8);
        if (i + AHEAD < n) {
            prefetch_slot(self, p + 8 * (i + AHEAD));
        }
        if (value == NULL || fp != last_fp) {  /* a worker's sources come in runs: one lookup a run */
            value = lookup(self, fp);
            last_fp = fp;
            if (value == NULL) {
                PyObject *key = PyLong_FromLongLong((long long)(int64_t)fp);
                if (key != NULL) {
                    PyErr_SetObject(PyExc_KeyError, key);
                    Py_DECREF(key);
                }
                goto done;
            }
        }
        uint64_t v = *value - base;
        if (*value == fp || v > (uint64_t)INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "a stored value is no state number above the base");
            goto done;
        }
        w[i] = (int32_t)v;
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&in);
    PyBuffer_Release(&out);
    return result;
}

static PyObject *
map_nbytes(ParentMap *self, void *Py_UNUSED(closure))
{
    return PyLong_FromUnsignedLongLong(self->capacity * 2 * sizeof(uint64_t));
}

static int
map_init(ParentMap *self, PyObject *args, PyObject *kwds)
{
    static char *names[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, ":ParentMap", names)) {
        return -1;
    }
    PyMem_RawFree(self->slots);
    self->slots = NULL;
    self->capacity = 0;
    self->used = 0;
    self->zero_present = 0;
    return grow(self);
}

static void
map_dealloc(ParentMap *self)
{
    PyMem_RawFree(self->slots);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
map_repr(ParentMap *self)
{
    return PyUnicode_FromFormat("<ParentMap of %zd fingerprints, %llu slots>", map_length(self),
                                (unsigned long long)self->capacity);
}

static PyMappingMethods map_as_mapping = {
    .mp_length = (lenfunc)map_length,
    .mp_subscript = (binaryfunc)map_subscript,
    .mp_ass_subscript = (objobjargproc)map_ass_subscript,
};

static PySequenceMethods map_as_sequence = {
    .sq_contains = (objobjproc)map_contains,
};

static PyMethodDef map_methods[] = {
    {"get", (PyCFunction)(void (*)(void))map_get, METH_FASTCALL,
     "get(fp[, default]): fp's parent (None for an initial state), or default when fp is absent"},
    {"pairs", (PyCFunction)map_pairs, METH_NOARGS,
     "pairs(): every (fingerprint, parent) as two native 64-bit words, an initial state its own parent"},
    {"absorb", (PyCFunction)map_absorb, METH_O, "absorb(buffer): add the pairs of a buffer written by pairs()"},
    {"enumerate", (PyCFunction)(void (*)(void))map_enumerate, METH_FASTCALL,
     "enumerate(fps, first): store fps[i] -> first + i for every 8-byte fingerprint of a buffer"},
    {"numbers", (PyCFunction)(void (*)(void))map_numbers, METH_FASTCALL,
     "numbers(fps, base, out): out[i] = self[fps[i]] - base, into an array('i')"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef map_getset[] = {
    {"nbytes", (getter)map_nbytes, NULL, "bytes of the slot array", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ParentMapType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "isrcheck.engine._parentmap.ParentMap",
    .tp_doc = "ParentMap(): a flat map from state fingerprints to their parent's fingerprint "
              "(None for an initial state); it only grows",
    .tp_basicsize = sizeof(ParentMap),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)map_init,
    .tp_dealloc = (destructor)map_dealloc,
    .tp_repr = (reprfunc)map_repr,
    .tp_as_mapping = &map_as_mapping,
    .tp_as_sequence = &map_as_sequence,
    .tp_methods = map_methods,
    .tp_getset = map_getset,
    .tp_hash = PyObject_HashNotImplemented,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "isrcheck.engine._parentmap",
    .m_doc = "The single-process checker's flat fingerprint-to-parent map (see engine/parentmap.py).",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__parentmap(void)
{
    return module_with_type(&module, &ParentMapType);
}
