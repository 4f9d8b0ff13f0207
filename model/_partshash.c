/* PartsHasher: the checker's fingerprint of a Kafka-model state (model/statehash.py), in C.
 *
 * It computes exactly the number StateHasher.fingerprint computes (a test compares them on every
 * reachable state of several models), faster:
 *
 * - Each part position (a top-level field; one broker; one inbox) remembers two parts with their
 *   hashes, a *stable* and a *recent* one. A part met for the first time becomes the recent one;
 *   met again while it is the recent one, the stable one. The checker hashes the successors of one
 *   state one after another and each holds, in a position, either its parent's part (unchanged by
 *   the action) or one of its own (which no other state holds): the parent's parts settle as the
 *   stable ones and are not hashed again however many successors changed them in between.
 * - One level down, the same: each replica position of a broker, and each field of every other
 *   part (a field of the controller, of the metadata store; a request of an inbox), remembers its
 *   values, so a part of which one nested tuple changed rehashes that tuple alone.
 * - No Python-level bookkeeping: the memo holds (strong) references and C integers.
 *
 * Holding a reference keeps a remembered part alive, so a part that is the very object remembered
 * is the same immutable value: identity is a sound test. The numbers are those of Python's own
 * tuple hash (xxHash-based, 3.11) and int hash, with None replaced as statehash.py says.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../engine/_module.h"

#if SIZEOF_PY_UHASH_T != 8
#error "PartsHasher assumes 64-bit hashes"
#endif

#define XXPRIME_1 ((Py_uhash_t)11400714785074694791ULL)
#define XXPRIME_2 ((Py_uhash_t)14029467366897019727ULL)
#define XXPRIME_5 ((Py_uhash_t)2870177450012600261ULL)
#define XXROTATE(x) (((x) << 31) | ((x) >> 33))
#define MODULUS (((Py_uhash_t)1 << 61) - 1)

/* The accumulator of Python's tuple hash, one lane at a time. */
static inline Py_uhash_t
acc_add(Py_uhash_t acc, Py_uhash_t lane)
{
    acc += lane * XXPRIME_2;
    acc = XXROTATE(acc);
    return acc * XXPRIME_1;
}

static inline Py_hash_t
acc_end(Py_uhash_t acc, Py_ssize_t len)
{
    acc += (Py_uhash_t)len ^ (XXPRIME_5 ^ 3527539UL);
    if (acc == (Py_uhash_t)-1) {
        return 1546275796;
    }
    return (Py_hash_t)acc;
}

/* hash(v) of the Python int v, as Python computes it (the residue modulo 2**61 - 1, signed). */
static inline Py_uhash_t
int_lane(Py_hash_t v)
{
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
    PyObject *stable;
    Py_hash_t stable_hash;
    PyObject *recent;
    Py_hash_t recent_hash;
} Slot;

/* The remembered hash of x in this position, if x is one of the two remembered parts. */
static inline int
slot_find(Slot *s, PyObject *x, Py_hash_t *out)
{
    if (x == s->stable) {
        *out = s->stable_hash;
        return 1;
    }
    if (x == s->recent) {
        /* met twice: it becomes the stable one */
        PyObject *o = s->stable;
        Py_hash_t h = s->stable_hash;
        s->stable = s->recent;
        s->stable_hash = s->recent_hash;
        s->recent = o;
        s->recent_hash = h;
        *out = s->stable_hash;
        return 1;
    }
    return 0;
}

static inline void
slot_put(Slot *s, PyObject *x, Py_hash_t h)
{
    PyObject *old = s->recent;
    Py_INCREF(x);
    s->recent = x;
    s->recent_hash = h;
    Py_XDECREF(old);
}

static void
slots_clear(Slot *slots, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_CLEAR(slots[i].stable);
        Py_CLEAR(slots[i].recent);
    }
}

#define MAX_FIELDS 16 /* fields remembered one by one per part; a longer part is hashed whole */

typedef struct {
    PyObject_HEAD
    Py_ssize_t fields;    /* fields of the state */
    Py_ssize_t brokers;   /* the field holding the brokers (one part each) */
    Py_ssize_t inbox;     /* the field holding the inboxes (one part each) */
    Py_ssize_t replicas;  /* the broker's field holding its replicas (None: no replica) */
    Py_hash_t none_hash;  /* what stands for None */
    Py_ssize_t nparts;    /* part positions: fields - 2 + brokers + inboxes (0: nothing hashed yet) */
    Py_ssize_t nbrokers;
    Py_ssize_t nreplicas; /* replica positions per broker */
    Slot *parts;          /* nparts */
    Slot *replica_slots;  /* nbrokers * nreplicas */
    Slot *field_slots;    /* nparts * MAX_FIELDS (the brokers' rows unused) */
} PartsHasher;

static void
hasher_release(PartsHasher *self)
{
    slots_clear(self->parts, self->nparts);
    slots_clear(self->replica_slots, self->nbrokers * self->nreplicas);
    slots_clear(self->field_slots, self->nparts * MAX_FIELDS);
    PyMem_Free(self->parts);
    PyMem_Free(self->replica_slots);
    PyMem_Free(self->field_slots);
    self->parts = self->replica_slots = self->field_slots = NULL;
    self->nparts = self->nbrokers = self->nreplicas = 0;
}

static int
hasher_shape(PartsHasher *self, Py_ssize_t nbrokers, Py_ssize_t ninbox, Py_ssize_t nreplicas)
{
    Py_ssize_t nparts = self->fields - 2 + nbrokers + ninbox;
    if (nparts == self->nparts && nbrokers == self->nbrokers && nreplicas == self->nreplicas) {
        return 0;
    }
    hasher_release(self);
    Slot *parts = PyMem_Calloc((size_t)nparts, sizeof(Slot));
    Slot *replica_slots = PyMem_Calloc((size_t)(nbrokers * nreplicas) + 1, sizeof(Slot));
    Slot *field_slots = PyMem_Calloc((size_t)(nparts * MAX_FIELDS), sizeof(Slot));
    if (parts == NULL || replica_slots == NULL || field_slots == NULL) {
        PyMem_Free(parts);
        PyMem_Free(replica_slots);
        PyMem_Free(field_slots);
        PyErr_NoMemory();
        return -1;
    }
    self->parts = parts;
    self->replica_slots = replica_slots;
    self->field_slots = field_slots;
    self->nparts = nparts;
    self->nbrokers = nbrokers;
    self->nreplicas = nreplicas;
    return 0;
}

/* One replica (None as none_hash), remembered in its slot. */
static inline int
replica_lane(PartsHasher *self, Slot *slot, PyObject *r, Py_uhash_t *lane)
{
    Py_hash_t h;
    if (r == Py_None) {
        *lane = int_lane(self->none_hash);
        return 0;
    }
    if (!slot_find(slot, r, &h)) {
        h = PyObject_Hash(r);
        if (h == -1) {
            return -1;
        }
        slot_put(slot, r, h);
    }
    *lane = (Py_uhash_t)h;
    return 0;
}

/* hash(x) of one part, its tuple fields remembered in fields[0..MAX_FIELDS) (a part that is not a
 * plain-hashing tuple, or is longer, is hashed whole). */
static int
part_hash(PyObject *x, Slot *fields, Py_hash_t *out)
{
    if (!PyTuple_Check(x) || Py_TYPE(x)->tp_hash != PyTuple_Type.tp_hash || PyTuple_GET_SIZE(x) > MAX_FIELDS) {
        Py_hash_t h = PyObject_Hash(x);
        if (h == -1) {
            return -1;
        }
        *out = h;
        return 0;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(x);
    Py_uhash_t acc = XXPRIME_5;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(x, i);
        Py_hash_t h;
        if (!PyTuple_Check(item)) {  /* an int or a bool: cheaper to hash than to remember */
            h = PyObject_Hash(item);
            if (h == -1) {
                return -1;
            }
        } else if (!slot_find(fields + i, item, &h)) {
            h = PyObject_Hash(item);
            if (h == -1) {
                return -1;
            }
            slot_put(fields + i, item, h);
        }
        acc = acc_add(acc, (Py_uhash_t)h);
    }
    *out = acc_end(acc, n);
    return 0;
}

/* statehash.broker_hash: the broker's tuple hash, its replicas' tuple hashed with None replaced. */
static int
broker_hash(PartsHasher *self, PyObject *b, Py_ssize_t index, Py_hash_t *out)
{
    if (!PyTuple_Check(b) || Py_TYPE(b)->tp_hash != PyTuple_Type.tp_hash || PyTuple_GET_SIZE(b) <= self->replicas) {
        PyErr_SetString(PyExc_TypeError, "a broker must be a plain-hashing tuple holding its replicas");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(b);
    Py_uhash_t acc = XXPRIME_5;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(b, i);
        Py_uhash_t lane;
        if (i == self->replicas) {
            if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != self->nreplicas) {
                PyErr_SetString(PyExc_TypeError, "a broker's replicas must be a tuple, one per partition");
                return -1;
            }
            Py_uhash_t racc = XXPRIME_5;
            Slot *slots = self->replica_slots + index * self->nreplicas;
            for (Py_ssize_t j = 0; j < self->nreplicas; j++) {
                Py_uhash_t rlane;
                if (replica_lane(self, slots + j, PyTuple_GET_ITEM(item, j), &rlane) < 0) {
                    return -1;
                }
                racc = acc_add(racc, rlane);
            }
            lane = (Py_uhash_t)acc_end(racc, self->nreplicas);
        } else {
            Py_hash_t h = PyObject_Hash(item);
            if (h == -1) {
                return -1;
            }
            lane = (Py_uhash_t)h;
        }
        acc = acc_add(acc, lane);
    }
    *out = acc_end(acc, n);
    return 0;
}

static PyObject *
hasher_fingerprint(PartsHasher *self, PyObject *state)
{
    if (!PyTuple_Check(state) || PyTuple_GET_SIZE(state) != self->fields) {
        PyErr_Format(PyExc_TypeError, "fingerprint() wants a state: a tuple of %zd fields", self->fields);
        return NULL;
    }
    PyObject *brokers = PyTuple_GET_ITEM(state, self->brokers);
    PyObject *inbox = PyTuple_GET_ITEM(state, self->inbox);
    if (!PyTuple_Check(brokers) || !PyTuple_Check(inbox)) {
        PyErr_SetString(PyExc_TypeError, "a state's brokers and inboxes must be tuples");
        return NULL;
    }
    Py_ssize_t nbrokers = PyTuple_GET_SIZE(brokers);
    Py_ssize_t nreplicas = 0;
    if (nbrokers > 0) {
        PyObject *b0 = PyTuple_GET_ITEM(brokers, 0);
        if (PyTuple_Check(b0) && PyTuple_GET_SIZE(b0) > self->replicas
                && PyTuple_Check(PyTuple_GET_ITEM(b0, self->replicas))) {
            nreplicas = PyTuple_GET_SIZE(PyTuple_GET_ITEM(b0, self->replicas));
        }
    }
    if (hasher_shape(self, nbrokers, PyTuple_GET_SIZE(inbox), nreplicas) < 0) {
        return NULL;
    }
    Slot *slot = self->parts;
    Py_uhash_t acc = XXPRIME_5;
    for (Py_ssize_t k = 0; k < self->fields; k++) {
        if (k == self->brokers) {
            for (Py_ssize_t i = 0; i < nbrokers; i++, slot++) {
                PyObject *x = PyTuple_GET_ITEM(brokers, i);
                Py_hash_t h;
                if (!slot_find(slot, x, &h)) {
                    if (broker_hash(self, x, i, &h) < 0) {
                        return NULL;
                    }
                    slot_put(slot, x, h);
                }
                acc = acc_add(acc, int_lane(h));
            }
        } else if (k == self->inbox) {
            Py_ssize_t n = PyTuple_GET_SIZE(inbox);
            for (Py_ssize_t i = 0; i < n; i++, slot++) {
                PyObject *x = PyTuple_GET_ITEM(inbox, i);
                Py_hash_t h;
                if (!slot_find(slot, x, &h)) {
                    if (part_hash(x, self->field_slots + (slot - self->parts) * MAX_FIELDS, &h) < 0) {
                        return NULL;
                    }
                    slot_put(slot, x, h);
                }
                acc = acc_add(acc, int_lane(h));
            }
        } else {
            PyObject *x = PyTuple_GET_ITEM(state, k);
            Py_hash_t h;
            if (x == Py_None) {
                h = self->none_hash;
            } else if (!slot_find(slot, x, &h)) {
                if (part_hash(x, self->field_slots + (slot - self->parts) * MAX_FIELDS, &h) < 0) {
                    return NULL;
                }
                slot_put(slot, x, h);
            }
            acc = acc_add(acc, int_lane(h));
            slot++;
        }
    }
    return PyLong_FromSsize_t(acc_end(acc, self->nparts));
}

static int
hasher_init(PartsHasher *self, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"fields", "brokers", "inbox", "replicas", "none_hash", NULL};
    Py_ssize_t fields, brokers, inbox, replicas;
    Py_hash_t none_hash;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "nnnnn", names, &fields, &brokers, &inbox, &replicas,
                                     &none_hash)) {
        return -1;
    }
    if (fields < 2 || brokers < 0 || brokers >= fields || inbox < 0 || inbox >= fields || brokers == inbox
            || replicas < 0) {
        PyErr_SetString(PyExc_ValueError, "PartsHasher: the field positions do not fit the state");
        return -1;
    }
    hasher_release(self);
    self->fields = fields;
    self->brokers = brokers;
    self->inbox = inbox;
    self->replicas = replicas;
    self->none_hash = none_hash;
    return 0;
}

static int
hasher_traverse(PartsHasher *self, visitproc visit, void *arg)
{
    for (Py_ssize_t i = 0; i < self->nparts; i++) {
        Py_VISIT(self->parts[i].stable);
        Py_VISIT(self->parts[i].recent);
    }
    for (Py_ssize_t i = 0; i < self->nbrokers * self->nreplicas; i++) {
        Py_VISIT(self->replica_slots[i].stable);
        Py_VISIT(self->replica_slots[i].recent);
    }
    for (Py_ssize_t i = 0; i < self->nparts * MAX_FIELDS; i++) {
        Py_VISIT(self->field_slots[i].stable);
        Py_VISIT(self->field_slots[i].recent);
    }
    return 0;
}

static int
hasher_clear(PartsHasher *self)
{
    slots_clear(self->parts, self->nparts);
    slots_clear(self->replica_slots, self->nbrokers * self->nreplicas);
    slots_clear(self->field_slots, self->nparts * MAX_FIELDS);
    return 0;
}

static void
hasher_dealloc(PartsHasher *self)
{
    PyObject_GC_UnTrack(self);
    hasher_release(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A copy is a fresh hasher with the same layout: what it remembers is only a cache. */
static PyObject *
hasher_reduce(PartsHasher *self, PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("(O(nnnnn))", (PyObject *)Py_TYPE(self), self->fields, self->brokers, self->inbox,
                         self->replicas, self->none_hash);
}

static PyMethodDef hasher_methods[] = {
    {"fingerprint", (PyCFunction)hasher_fingerprint, METH_O,
     "fingerprint(state): the number statehash.StateHasher.fingerprint gives for state"},
    {"__reduce__", (PyCFunction)hasher_reduce, METH_NOARGS, "a fresh hasher with the same layout"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PartsHasherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "isrcheck.model._partshash.PartsHasher",
    .tp_doc = PyDoc_STR("PartsHasher(fields, brokers, inbox, replicas, none_hash): model/statehash.py's "
                        "fingerprint, remembering parts by identity"),
    .tp_basicsize = sizeof(PartsHasher),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)hasher_init,
    .tp_dealloc = (destructor)hasher_dealloc,
    .tp_traverse = (traverseproc)hasher_traverse,
    .tp_clear = (inquiry)hasher_clear,
    .tp_methods = hasher_methods,
};

static struct PyModuleDef partshash_module = {
    PyModuleDef_HEAD_INIT, "_partshash", "The Kafka model's state fingerprint, part by part, in C.", -1, NULL,
};

PyMODINIT_FUNC
PyInit__partshash(void)
{
    return module_with_type(&partshash_module, &PartsHasherType);
}
