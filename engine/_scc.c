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

/* The state count argument of every entry point: 0 <= n <= 2**31 - 1 (state numbers are int32), or -1
 * with the exception set. */
static Py_ssize_t
state_count(PyObject *arg)
{
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (n < 0 || n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "n must be between 0 and 2**31 - 1");
        return -1;
    }
    return n;
}

static PyObject *
scc_nontrivial(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "nontrivial(offsets, dst, n)");
        return NULL;
    }
    Py_ssize_t n = state_count(args[2]);
    if (n < 0) {
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

/* A read-only view of the `n` bytes of a bytes-like object (a bytearray of flags), or -1. */
static int
flag_view(PyObject *obj, Py_buffer *view, Py_ssize_t n, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (view->len != n) {
        PyErr_Format(PyExc_ValueError, "%s must hold one byte per state", what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* quiet(offsets, label, n, in_nontrivial): a bytearray, 1 for each state outside every nontrivial
 * component where no fair instance is enabled (no labelled edge out): where a behaviour may
 * stutter forever. Found once per graph; engine/liveness.py's _fair_bad asks it of every state for
 * every property instance. */
static PyObject *
scc_quiet(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "quiet(offsets, label, n, in_nontrivial)");
        return NULL;
    }
    Py_ssize_t n = state_count(args[2]);
    if (n < 0) {
        return NULL;
    }
    Py_buffer ob, lb, nb;
    if (int_view(args[0], &ob, 8, "offsets") < 0) {
        return NULL;
    }
    if (int_view(args[1], &lb, 4, "label") < 0) {
        PyBuffer_Release(&ob);
        return NULL;
    }
    if (flag_view(args[3], &nb, n, "in_nontrivial") < 0) {
        PyBuffer_Release(&ob);
        PyBuffer_Release(&lb);
        return NULL;
    }
    PyObject *out = NULL;
    const int64_t *offsets = (const int64_t *)ob.buf;
    const int32_t *label = (const int32_t *)lb.buf;
    const char *in_nt = (const char *)nb.buf;
    if (ob.len / 8 < n + 1 || (n > 0 && (offsets[0] < 0 || offsets[n] > lb.len / 4))) {
        PyErr_SetString(PyExc_ValueError, "offsets must hold n + 1 entries within the label array");
        goto done;
    }
    out = PyByteArray_FromStringAndSize(NULL, n);
    if (out == NULL) {
        goto done;
    }
    char *q = PyByteArray_AS_STRING(out);
    for (Py_ssize_t v = 0; v < n; v++) {
        char quiet = !in_nt[v];
        if (offsets[v + 1] < offsets[v]) {
            PyErr_SetString(PyExc_ValueError, "offsets must ascend");
            Py_CLEAR(out);
            goto done;
        }
        for (int64_t k = offsets[v]; quiet && k < offsets[v + 1]; k++) {
            if (label[k] != -1) {
                quiet = 0;
            }
        }
        q[v] = quiet;
    }
done:
    PyBuffer_Release(&ob);
    PyBuffer_Release(&lb);
    PyBuffer_Release(&nb);
    return out;
}

/* An entry of the stem search's heap: ordered as engine/liveness.py's tuples (length, premise
 * depth, state), so the states are settled in the Python search's order and the same stem wins. */
typedef struct {
    int32_t len, at, v;
} StemEntry;

static inline int
entry_less(StemEntry a, StemEntry b)
{
    return a.len != b.len ? a.len < b.len : a.at != b.at ? a.at < b.at : a.v < b.v;
}

static void
heap_up(StemEntry *h, Py_ssize_t i)
{
    StemEntry x = h[i];
    while (i > 0) {
        Py_ssize_t up = (i - 1) / 2;
        if (!entry_less(x, h[up])) {
            break;
        }
        h[i] = h[up];
        i = up;
    }
    h[i] = x;
}

static void
heap_down(StemEntry *h, Py_ssize_t size, Py_ssize_t i)
{
    StemEntry x = h[i];
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= size) {
            break;
        }
        if (c + 1 < size && entry_less(h[c + 1], h[c])) {
            c++;
        }
        if (!entry_less(h[c], x)) {
            break;
        }
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/* stem(offsets, dst, depth, premise, goal, bit, quiet, fair): engine/liveness.py's _stem for one
 * instance (bit `bit` of the 8-byte masks `premise` and `goal`) with the `bad` states given as
 * flags: quiet[v] and not the goal at v (a state where the behaviour may stutter), or fair[v] (a
 * state of a fair component of the `not Q` subgraph inside a nontrivial component; None when
 * there is none). The shortest path from a premise state through `not Q` states into a bad one,
 * ties to the earliest premise: its states (the premise state first), or None. Without any bad
 * state the search is not run (the Python skips such an instance too). */
static PyObject *
scc_stem(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "stem(offsets, dst, depth, premise, goal, bit, quiet, fair)");
        return NULL;
    }
    long bit = PyLong_AsLong(args[5]);
    if (bit == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (bit < 0 || bit > 63) {
        PyErr_SetString(PyExc_ValueError, "bit must be between 0 and 63");
        return NULL;
    }
    Py_buffer ob, db, deb, pb, gb, qb, fb;
    int have_db = 0, have_deb = 0, have_pb = 0, have_gb = 0, have_qb = 0, have_fb = 0;
    PyObject *out = NULL;
    int32_t *len = NULL, *at = NULL, *pred = NULL;
    StemEntry *heap = NULL;
    if (int_view(args[0], &ob, 8, "offsets") < 0) {
        return NULL;
    }
    Py_ssize_t n = ob.len / 8 - 1;
    if ((have_db = int_view(args[1], &db, 4, "dst") == 0) == 0 || (have_deb = int_view(args[2], &deb, 4, "depth") == 0) == 0
            || (have_pb = PyObject_GetBuffer(args[3], &pb, PyBUF_SIMPLE) == 0) == 0
            || (have_gb = PyObject_GetBuffer(args[4], &gb, PyBUF_SIMPLE) == 0) == 0
            || (have_qb = flag_view(args[6], &qb, n, "quiet") == 0) == 0
            || (args[7] != Py_None && (have_fb = flag_view(args[7], &fb, n, "fair") == 0) == 0)) {
        goto done;
    }
    if (n < 0 || n > INT32_MAX || deb.len / 4 != n || pb.len != 8 * n || gb.len != 8 * n) {
        PyErr_SetString(PyExc_ValueError, "stem: depth, premise and goal must hold one entry per state");
        goto done;
    }
    const int64_t *offsets = (const int64_t *)ob.buf;
    const int32_t *dst = (const int32_t *)db.buf, *depth = (const int32_t *)deb.buf;
    const uint64_t *premise = (const uint64_t *)pb.buf, *goal = (const uint64_t *)gb.buf;
    const char *quiet = (const char *)qb.buf, *fair = have_fb ? (const char *)fb.buf : NULL;
    Py_ssize_t nedges = db.len / 4;
    for (Py_ssize_t v = 0; v <= n; v++) {  /* the arrays are the caller's: check before trusting them */
        if (offsets[v] < 0 || offsets[v] > nedges || (v > 0 && offsets[v] < offsets[v - 1])) {
            PyErr_SetString(PyExc_ValueError, "offsets must ascend within the edge array");
            goto done;
        }
    }
    uint64_t mask = (uint64_t)1 << bit;
#define BAD(v) ((quiet[v] && !(goal[v] & mask)) || (fair != NULL && fair[v]))
    int any = 0;
    for (Py_ssize_t v = 0; v < n && !any; v++) {
        any = BAD(v);
    }
    if (!any) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    size_t cells = (size_t)(n > 0 ? n : 1);
    len = malloc(cells * sizeof *len);
    at = malloc(cells * sizeof *at);
    pred = malloc(cells * sizeof *pred);
    Py_ssize_t cap = 1024, size = 0;
    heap = malloc((size_t)cap * sizeof *heap);
    if (!len || !at || !pred || !heap) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t v = 0; v < n; v++) {
        len[v] = -1;  /* not reached */
    }
    for (Py_ssize_t v = 0; v < n; v++) {
        if ((premise[v] & mask) && !(goal[v] & mask)) {
            if (size == cap) {
                StemEntry *grown = realloc(heap, (size_t)(2 * cap) * sizeof *heap);
                if (grown == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                heap = grown;
                cap *= 2;
            }
            len[v] = at[v] = depth[v];
            pred[v] = -1;
            heap[size++] = (StemEntry){depth[v], depth[v], (int32_t)v};
        }
    }
    for (Py_ssize_t i = size / 2 - 1; i >= 0; i--) {
        heap_down(heap, size, i);
    }
    while (size > 0) {
        StemEntry e = heap[0];
        heap[0] = heap[--size];
        if (size > 0) {
            heap_down(heap, size, 0);
        }
        int32_t v = e.v;
        if (e.len != len[v] || e.at != at[v]) {
            continue;  /* superseded by a shorter way in */
        }
        if (BAD(v)) {
            Py_ssize_t count = 1;
            for (int32_t u = v; pred[u] >= 0; u = pred[u]) {
                count++;
            }
            out = PyList_New(count);
            if (out == NULL) {
                goto done;
            }
            int32_t u = v;
            for (Py_ssize_t i = count - 1; i >= 0; i--, u = pred[u]) {
                PyObject *x = PyLong_FromLong(u);
                if (x == NULL) {
                    Py_CLEAR(out);
                    goto done;
                }
                PyList_SET_ITEM(out, i, x);
            }
            goto done;
        }
        for (int64_t k = offsets[v]; k < offsets[v + 1]; k++) {
            int32_t w = dst[k];
            if (w < 0 || w >= n) {
                PyErr_SetString(PyExc_ValueError, "an edge leads outside the graph");
                goto done;
            }
            if (goal[w] & mask) {
                continue;
            }
            StemEntry cand = {e.len + 1, e.at, w};
            if (len[w] >= 0 && !entry_less(cand, (StemEntry){len[w], at[w], w})) {
                continue;
            }
            len[w] = cand.len;
            at[w] = cand.at;
            pred[w] = v;
            if (size == cap) {
                StemEntry *grown = realloc(heap, (size_t)(2 * cap) * sizeof *heap);
                if (grown == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                heap = grown;
                cap *= 2;
            }
            heap[size] = cand;
            heap_up(heap, size++);
        }
    }
#undef BAD
    out = Py_NewRef(Py_None);
done:
    free(len);
    free(at);
    free(pred);
    free(heap);
    PyBuffer_Release(&ob);
    if (have_db) {
        PyBuffer_Release(&db);
    }
    if (have_deb) {
        PyBuffer_Release(&deb);
    }
    if (have_pb) {
        PyBuffer_Release(&pb);
    }
    if (have_gb) {
        PyBuffer_Release(&gb);
    }
    if (have_qb) {
        PyBuffer_Release(&qb);
    }
    if (have_fb) {
        PyBuffer_Release(&fb);
    }
    return out;
}

static PyMethodDef scc_methods[] = {
    {"nontrivial", (PyCFunction)(void (*)(void))scc_nontrivial, METH_FASTCALL,
     "nontrivial(offsets, dst, n): the strongly connected components of more than one state, in Tarjan's order"},
    {"quiet", (PyCFunction)(void (*)(void))scc_quiet, METH_FASTCALL,
     "quiet(offsets, label, n, in_nontrivial): 1 for each state outside the nontrivial components with no fair edge out"},
    {"stem", (PyCFunction)(void (*)(void))scc_stem, METH_FASTCALL,
     "stem(offsets, dst, depth, premise, goal, bit, quiet, fair): the shortest stem into a bad state, or None"},
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
