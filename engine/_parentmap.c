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
