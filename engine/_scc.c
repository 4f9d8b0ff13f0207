/* nontrivial(offsets, dst, n): the strongly connected components of more than one state of the
 * liveness graph (engine/liveness.py's flat arrays: edges of state v are dst[offsets[v]:offsets[v+1]]),
 * in the order, and each with its states in the order, the Python Tarjan (engine/liveness.py,
 * ``components``) gives them.
 *
 * Why: the components of the whole graph are found once per liveness check, over every state and
 * edge; in Python that pass took about a sixth of a liveness check (4.7 s of 30 s on 941,523 states
 * and 2,997,791 edges), most of it on graphs that are acyclic (the Kafka models': every component a
 * single state). Here it is one pass over the arrays with four int arrays of the graph's size. The
 * restricted passes (inside a nontrivial component, over the states where a goal does not hold) stay
 * in Python: they see only the components found here. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

/* A read-only view of a buffer of `itemsize`-byte signed ints (array('q') or array('i')). */
static int
int_view(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
        return -1;
    }
    if (view->itemsize != itemsize || view->format == NULL
            || (view->format[0] != (itemsize == 8 ? 'q' : 'i') && !(itemsize == 8 && view->format[0] == 'l'))) {
        PyErr_Format(PyExc_TypeError, "%s must be an array of %zd-byte signed ints", what, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *
scc_nontrivial(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "nontrivial(offsets, dst, n)");
        return NULL;
    }
    Py_ssize_t n = PyLong_AsSsize_t(args[2]);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n < 0 || n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "n must be between 0 and 2**31 - 1");
        return NULL;
    }
    Py_buffer ob, db;
    if (int_view(args[0], &ob, 8, "offsets") < 0) {
        return NULL;
    }
    if (int_view(args[1], &db, 4, "dst") < 0) {
        PyBuffer_Release(&ob);
        return NULL;
    }
    const int64_t *offsets = (const int64_t *)ob.buf;
    const int32_t *dst = (const int32_t *)db.buf;
    Py_ssize_t nedges = db.len / 4;
    PyObject *out = NULL;
    int32_t *index = NULL, *low = NULL, *stack = NULL, *work_v = NULL;
    int64_t *work_k = NULL;
    char *on_stack = NULL;
    if (ob.len / 8 < n + 1) {
        PyErr_SetString(PyExc_ValueError, "offsets must hold n + 1 entries");
        goto done;
    }
    for (Py_ssize_t v = 0; v <= n; v++) {  /* the arrays are the caller's: check before trusting them */
        if (offsets[v] < 0 || offsets[v] > nedges || (v > 0 && offsets[v] < offsets[v - 1])) {
            PyErr_SetString(PyExc_ValueError, "offsets must ascend within the edge array");
            goto done;
        }
    }
    for (Py_ssize_t k = 0; k < offsets[n]; k++) {
        if (dst[k] < 0 || dst[k] >= n) {
            PyErr_SetString(PyExc_ValueError, "an edge leads outside the graph");
            goto done;
        }
    }
    size_t cells = (size_t)(n > 0 ? n : 1);
    index = malloc(cells * sizeof *index);
    low = malloc(cells * sizeof *low);
    stack = malloc(cells * sizeof *stack);
    work_v = malloc(cells * sizeof *work_v);
    work_k = malloc(cells * sizeof *work_k);
    on_stack = calloc(cells, 1);
    if (!index || !low || !stack || !work_v || !work_k || !on_stack) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t v = 0; v < n; v++) {
        index[v] = -1;
    }
    out = PyList_New(0);
    if (out == NULL) {
        goto done;
    }
    int32_t counter = 0;
    Py_ssize_t sp = 0;  /* Tarjan's stack */
    for (int32_t root = 0; root < n; root++) {
        if (index[root] >= 0) {
            continue;
        }
        Py_ssize_t wp = 0;  /* the depth-first work stack: (state, next edge) */
        work_v[wp] = root;
        work_k[wp] = offsets[root];
        wp++;
        index[root] = low[root] = counter++;
        stack[sp++] = root;
        on_stack[root] = 1;
        while (wp > 0) {
            int32_t v = work_v[wp - 1];
            int64_t k = work_k[wp - 1];
            int64_t end = offsets[v + 1];
            int descended = 0;
            while (k < end) {
                int32_t w = dst[k++];
                if (index[w] < 0) {
                    work_k[wp - 1] = k;
                    index[w] = low[w] = counter++;
                    stack[sp++] = w;
                    on_stack[w] = 1;
                    work_v[wp] = w;
                    work_k[wp] = offsets[w];
                    wp++;
                    descended = 1;
                    break;
                }
                if (on_stack[w] && index[w] < low[v]) {
                    low[v] = index[w];
                }
            }
            if (descended) {
                continue;
            }
            wp--;
            if (wp > 0) {
                int32_t u = work_v[wp - 1];
                if (low[v] < low[u]) {
                    low[u] = low[v];
                }
            }
            if (low[v] == index[v]) {
                Py_ssize_t top = sp;
                while (stack[sp - 1] != v) {
                    sp--;
                }
                sp--;  /* stack[sp .. top) is the component, v first as pushed */
                for (Py_ssize_t i = sp; i < top; i++) {
                    on_stack[stack[i]] = 0;
                }
                if (top - sp > 1) {
                    PyObject *comp = PyList_New(top - sp);
                    if (comp == NULL) {
                        Py_CLEAR(out);
                        goto done;
                    }
                    /* popped from the top down, as the Python version appends them */
                    for (Py_ssize_t i = 0; i < top - sp; i++) {
                        PyObject *x = PyLong_FromLong(stack[top - 1 - i]);
                        if (x == NULL) {
                            Py_DECREF(comp);
                            Py_CLEAR(out);
                            goto done;
                        }
                        PyList_SET_ITEM(comp, i, x);
                    }
                    int failed = PyList_Append(out, comp);
                    Py_DECREF(comp);
                    if (failed < 0) {
                        Py_CLEAR(out);
                        goto done;
                    }
                }
            }
        }
    }
done:
    free(index);
    free(low);
    free(stack);
    free(work_v);
    free(work_k);
    free(on_stack);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&db);
    return out;
}

static PyMethodDef scc_methods[] = {
    {"nontrivial", (PyCFunction)(void (*)(void))scc_nontrivial, METH_FASTCALL,
     "nontrivial(offsets, dst, n): the strongly connected components of more than one state, in Tarjan's order"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef scc_module = {
    PyModuleDef_HEAD_INIT, "_scc", "The liveness graph's strongly connected components in one pass.", -1,
    scc_methods,
};

PyMODINIT_FUNC
PyInit__scc(void)
{
    return PyModule_Create(&scc_module);
}
