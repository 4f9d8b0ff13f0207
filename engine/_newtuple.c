/* new(cls, *items): an instance of a tuple subclass (the model's NamedTuple state classes) holding
 * ``items``, built in one step.
 *
 * Why: the checker builds a few NamedTuples per step, and the only way Python offers,
 * ``tuple.__new__(cls, items)``, goes through the generic slot wrapper, parses its arguments, builds
 * an intermediate tuple and copies it: about a tenth of a step's time in the compiled build. This
 * does what ``tuple.__new__`` does for a subclass (allocate with the class's tp_alloc, which also
 * tracks the object for the garbage collector, then store new references), called with the items
 * as a vector. model/state.py falls back to ``tuple.__new__`` when this module is not built
 * (ISRCHECK_BUILD_PURE=1) or not wanted (ISRCHECK_PURE=1); both give equal objects of the same class.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *
newtuple_new(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || !PyType_Check(args[0])
            || !PyType_IsSubtype((PyTypeObject *)args[0], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "new(cls, *items): cls must be a subclass of tuple");
        return NULL;
    }
    PyTypeObject *cls = (PyTypeObject *)args[0];
    Py_ssize_t n = nargs - 1;
    PyObject *obj = cls->tp_alloc(cls, n);
    if (obj == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = args[i + 1];
        Py_INCREF(item);
        PyTuple_SET_ITEM(obj, i, item);
    }
    return obj;
}

static PyMethodDef newtuple_methods[] = {
    {"new", (PyCFunction)(void (*)(void))newtuple_new, METH_FASTCALL,
     "new(cls, *items): the instance of the tuple subclass cls holding items"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef newtuple_module = {
    PyModuleDef_HEAD_INIT, "_newtuple", "Fast construction of tuple-subclass instances.", -1, newtuple_methods,
};

PyMODINIT_FUNC
PyInit__newtuple(void)
{
    return PyModule_Create(&newtuple_module);
}
