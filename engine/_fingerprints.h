/* What engine/_fptable.c and engine/_parentmap.c, the two tables of visited states' fingerprints,
 * share: reading a fingerprint argument, and the home slot of a fingerprint in a table of a
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

/* A fingerprint argument: any int in the signed 64-bit range, as its unsigned word; -1 with an
 * exception for anything else. */
static int
fp_arg(PyObject *o, uint64_t *out)
{
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "fingerprints must be ints (got %.100s)", Py_TYPE(o)->tp_name);
        return -1;
    }
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) {
        PyErr_SetString(PyExc_OverflowError, "fingerprints must fit in 64 bits (got a larger int)");
        return -1;
    }
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

#endif
