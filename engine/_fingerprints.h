/* What engine/_fptable.c and engine/_parentmap.c, the two tables of visited states' fingerprints,
 * share: reading a fingerprint (or a key) argument, and the home slot of a fingerprint in a table of a
 * power-of-two capacity. Fingerprints are the models' signed 64-bit ints, held as their words. */
#ifndef ISRCHECK_FINGERPRINTS_H
#define ISRCHECK_FINGERPRINTS_H

#include <Python.h>
#include <stdint.h>

#define MIX ((uint64_t)0x9E3779B97F4A7C15ULL)

/* A fingerprint's home slot: the fingerprints are hashes already, but tests and simple models use
 * small ints, so the bits are mixed once more (Fibonacci hashing). */
static inline size_t
home(uint64_t fp, uint64_t mask)
{
    uint64_t h = fp * MIX;
    h ^= h >> 32;
    return (size_t)(h & mask);
}

/* An int argument held as an unsigned word: any int in the signed 64-bit range, or with
 * `non_negative` one in [0, 2**63); -1 with an exception naming `what` (plural) for anything else.
 * The one reader behind fp_arg and engine/_fptable.c's key_arg, whose messages differ only in the
 * name and the range (engine/fptable.py raises the same ones in pure installs). */
static inline int
word_arg(PyObject *o, uint64_t *out, const char *what, int non_negative)
{
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be ints (got %.100s)", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow > 0 || (overflow < 0 && !non_negative)) {
        PyErr_Format(PyExc_OverflowError, "%s must fit in %d bits (got a larger int)", what, non_negative ? 63 : 64);
        return -1;
    }
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (non_negative && (overflow < 0 || v < 0)) {
        PyErr_Format(PyExc_ValueError, "%s must be non-negative", what);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

/* A fingerprint argument: any int in the signed 64-bit range, as its unsigned word; -1 with an
 * exception for anything else. */
static inline int
fp_arg(PyObject *o, uint64_t *out)
{
    return word_arg(o, out, "fingerprints", 0);
}

#endif
