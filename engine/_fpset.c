/* FingerprintSet: a flat set of state fingerprints (see engine/disk.py, the window of --disk).
 *
 * Why in C, and not engine/_parentmap.c's map: the disk search's window (the fingerprints of the
 * last two levels and of the next level's candidates) is what bounds how wide a level it can take,
 * and it needs membership only. One 8-byte slot per fingerprint, open addressing with linear
 * probing, grown by doubling at a load of 3/4: 10.7-21 bytes a fingerprint, half the map's.
 *
 * It answers what the window asks (``fp in s``, ``s[fp] = None``, ``len(s)``) so that the search's
 * code is the same for it and for a dict (the pure build), plus ``update(buffer)``: every 8-byte
 * fingerprint of a buffer at once (a level's fingerprint array). Fingerprints are signed 64-bit
 * ints; the word 0 marks an empty slot (fingerprint 0 has a flag of its own). Nothing is deleted:
 * a level's set is dropped whole.
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
    uint64_t *slots;     /* capacity fingerprints; 0: empty */
    uint64_t capacity;   /* a power of two */
    uint64_t used;       /* non-zero fingerprints stored */
    int zero_present;    /* fingerprint 0 is stored */
} FingerprintSet;

/* The slot of fp (non-zero): the one holding it, or the empty one where it would go. */
static inline uint64_t *
probe(uint64_t *slots, uint64_t capacity, uint64_t fp)
{
    uint64_t mask = capacity - 1;
    size_t i = home(fp, mask);
    for (;;) {
        uint64_t *s = slots + i;
        if (*s == fp || *s == 0) {
            return s;
        }
        i = (i + 1) & mask;
    }
}

static int
grow(FingerprintSet *self)
{
    uint64_t want = self->capacity ? self->capacity * 2 : INITIAL_SLOTS;
    if (want > ((uint64_t)PY_SSIZE_T_MAX) / 8) {
        PyErr_NoMemory();
        return -1;
    }
    uint64_t *fresh = PyMem_RawCalloc((size_t)want, sizeof(uint64_t));
    if (fresh == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (uint64_t j = 0; j < self->capacity; j++) {
        uint64_t fp = self->slots[j];
        if (fp != 0) {
            *probe(fresh, want, fp) = fp;
        }
    }
    PyMem_RawFree(self->slots);
    self->slots = fresh;
    self->capacity = want;
    return 0;
}

static int
has(FingerprintSet *self, uint64_t fp)
{
    if (fp == 0) {
        return self->zero_present;
    }
    return self->capacity != 0 && *probe(self->slots, self->capacity, fp) != 0;
}

static int
add(FingerprintSet *self, uint64_t fp)
{
    if (fp == 0) {
        self->zero_present = 1;
        return 0;
    }
    if ((self->used + 1) * 4 > self->capacity * 3 && grow(self) < 0) {
        return -1;
    }
    uint64_t *s = probe(self->slots, self->capacity, fp);
    if (*s == 0) {
        *s = fp;
        self->used++;
    }
    return 0;
}

static Py_ssize_t
set_length(FingerprintSet *self)
{
    return (Py_ssize_t)(self->used + (self->zero_present != 0));
}

static int
set_contains(FingerprintSet *self, PyObject *key)
{
    uint64_t fp;
    if (fp_arg(key, &fp) < 0) {
        return -1;
    }
    return has(self, fp);
}

/* s[fp] = None: add fp (the window's code is a dict's); any other value is refused. */
static int
set_ass_subscript(FingerprintSet *self, PyObject *key, PyObject *value)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "a FingerprintSet only grows: its fingerprints cannot be deleted");
        return -1;
    }
    if (value != Py_None) {
        PyErr_SetString(PyExc_TypeError, "a FingerprintSet holds no values: assign None");
        return -1;
    }
    uint64_t fp;
    if (fp_arg(key, &fp) < 0) {
        return -1;
    }
    return add(self, fp);
}

static PyObject *
set_subscript(FingerprintSet *self, PyObject *key)
{
    uint64_t fp;
    if (fp_arg(key, &fp) < 0) {
        return NULL;
    }
    if (!has(self, fp)) {
        PyErr_SetObject(PyExc_KeyError, key);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* update(buffer): add every 8-byte native-endian fingerprint of the buffer. */
static PyObject *
set_update(FingerprintSet *self, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (view.len % 8 != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "update() takes whole 8-byte fingerprints");
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len / 8;
    /* grow before inserting, so that each of the buffer's fingerprints is placed once */
    while ((self->used + (uint64_t)n) * 4 > self->capacity * 3) {
        if (grow(self) < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t fp;
        memcpy(&fp, p + 8 * i, 8);
        if (add(self, fp) < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

static PyObject *
set_nbytes(FingerprintSet *self, void *Py_UNUSED(closure))
{
    return PyLong_FromUnsignedLongLong(self->capacity * sizeof(uint64_t));
}

static int
set_init(FingerprintSet *self, PyObject *args, PyObject *kwds)
{
    static char *names[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, ":FingerprintSet", names)) {
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
set_dealloc(FingerprintSet *self)
{
    PyMem_RawFree(self->slots);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
set_repr(FingerprintSet *self)
{
    return PyUnicode_FromFormat("<FingerprintSet of %zd fingerprints, %llu slots>", set_length(self),
                                (unsigned long long)self->capacity);
}

static PyMappingMethods set_as_mapping = {
    .mp_length = (lenfunc)set_length,
    .mp_subscript = (binaryfunc)set_subscript,
    .mp_ass_subscript = (objobjargproc)set_ass_subscript,
};

static PySequenceMethods set_as_sequence = {
    .sq_contains = (objobjproc)set_contains,
};

static PyMethodDef set_methods[] = {
    {"update", (PyCFunction)set_update, METH_O,
     "update(buffer): add every 8-byte native-endian fingerprint of a buffer (a level's array)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef set_getset[] = {
    {"nbytes", (getter)set_nbytes, NULL, "bytes of the slot array", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject FingerprintSetType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "isrcheck.engine._fpset.FingerprintSet",
    .tp_doc = "FingerprintSet(): a flat set of state fingerprints (8 bytes a slot); it only grows",
    .tp_basicsize = sizeof(FingerprintSet),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)set_init,
    .tp_dealloc = (destructor)set_dealloc,
    .tp_repr = (reprfunc)set_repr,
    .tp_as_mapping = &set_as_mapping,
    .tp_as_sequence = &set_as_sequence,
    .tp_methods = set_methods,
    .tp_getset = set_getset,
    .tp_hash = PyObject_HashNotImplemented,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "isrcheck.engine._fpset",
    .m_doc = "A flat set of state fingerprints: the --disk search's window (see engine/disk.py).",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__fpset(void)
{
    return module_with_type(&module, &FingerprintSetType);
}
