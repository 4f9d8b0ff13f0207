/* What every plain C extension does to become a module: it defines one type and is the module
 * holding it. Written once here so that the module inits (engine/_codec.c, engine/_fptable.c,
 * engine/_parentmap.c, model/_partshash.c, peers/kafka_specification/_canon.c) cannot drift apart
 * in how they handle a failure half-way. */
#ifndef ISRCHECK_MODULE_H
#define ISRCHECK_MODULE_H

#include <Python.h>

/* The module of `def` holding `type` under its short name (tp_name after the last dot), the type
 * made ready on the way (PyModule_AddType); NULL with an exception on any failure, with nothing
 * leaked. */
static PyObject *
module_with_type(struct PyModuleDef *def, PyTypeObject *type)
{
    PyObject *m = PyModule_Create(def);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddType(m, type) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

#endif
