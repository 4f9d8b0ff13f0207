/* The liveness graph of a parallel search, assembled from the workers' parts in two passes over
 * flat buffers (engine/liveness.py, GraphBuilder.assemble, is the definition these follow):
 *
 *   merge(keys, fps, masks, out_fps, out_depth, out_parent, out_masks, first, level_shift,
 *         action_bits, rank_mask)
 *       numbers the settled states in discovery-key order, merging the workers' ascending runs of
 *       keys, and writes each state's fingerprint, depth, parent and masks at its number;
 *   rows(srcs, dsts, labs, canon, glob, out_offsets, out_dst, out_label) -> new canonical labels
 *       lays out each state's steps as its row (the steps of a source, in the order its worker
 *       took them) with every worker's fair label turned into the graph's.
 *
 * Why: the coordinator merged the parts with Python loops over every state and every edge (the key
 * merge, a mask append per state and property, a dict lookup per edge); on 6,994,032 states and
 * 23,734,034 edges that was about 60 s, more than half of what liveness added to the safety search.
 * The fingerprint-to-number index is engine/_parentmap.c's table, filled and read in bulk there
 * (ParentMap.enumerate, ParentMap.numbers); here there is no hashing, only arrays.
 *
 * Every buffer is the caller's: lengths, ranges and orders are checked before anything is written
 * past them, and a part that breaks the parallel search's order (a worker's sources out of state
 * order, keys out of key order) is refused with ValueError rather than assembled into another graph. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A view of a buffer of `itemsize`-byte words: typed arrays must have that item size; untyped
 * buffers (the bytes a worker sent) a whole number of words. `writable` for an output. */
static int
words(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, int writable, const char *what)
{
    int flags = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        return -1;
    }
    int typed = view->format != NULL && strcmp(view->format, "B") != 0;
    if ((typed && view->itemsize != itemsize) || view->len % itemsize != 0) {
        PyErr_Format(PyExc_TypeError, "%s must hold %zd-byte words", what, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Views of every item of a sequence of buffers; NULL with an exception (nothing left held). */
static Py_buffer *
views_of(PyObject *seq, Py_ssize_t count, Py_ssize_t itemsize, int writable, const char *what)
{
    PyObject *fast = PySequence_Fast(seq, what);
    if (fast == NULL) {
        return NULL;
    }
    if (PySequence_Fast_GET_SIZE(fast) != count) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd buffers, got %zd", what, count,
                     PySequence_Fast_GET_SIZE(fast));
        Py_DECREF(fast);
        return NULL;
    }
    Py_buffer *views = PyMem_Calloc((size_t)(count > 0 ? count : 1), sizeof *views);
    if (views == NULL) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        if (words(PySequence_Fast_GET_ITEM(fast, i), &views[i], itemsize, writable, what) < 0) {
            while (--i >= 0) {
                PyBuffer_Release(&views[i]);
            }
            PyMem_Free(views);
            Py_DECREF(fast);
            return NULL;
        }
    }
    Py_DECREF(fast);
    return views;
}

static void
release_views(Py_buffer *views, Py_ssize_t count)
{
    if (views == NULL) {
        return;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyBuffer_Release(&views[i]);
    }
    PyMem_Free(views);
}

static int
ssize_arg(PyObject *o, Py_ssize_t *out)
{
    *out = PyLong_AsSsize_t(o);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int64_t
word_at(const Py_buffer *v, Py_ssize_t i)
{
    int64_t x;
    memcpy(&x, (const char *)v->buf + 8 * i, 8);
    return x;
}

/* merge: see the top of the file. `masks[r]` holds worker r's 2 * P mask runs (premise and goal of
 * each property in turn), `out_masks` the graph's 2 * P arrays in the same order; every output is
 * already sized to `first` + the states settled, and written from `first` on (the initial states,
 * level 0, are numbers 0 .. first - 1). */
static PyObject *
assemble_merge(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "merge(keys, fps, masks, out_fps, out_depth, out_parent, out_masks, "
                                         "first, level_shift, action_bits, rank_mask)");
        return NULL;
    }
    Py_ssize_t first, level_shift, action_bits, rank_mask;
    if (ssize_arg(args[7], &first) < 0 || ssize_arg(args[8], &level_shift) < 0
            || ssize_arg(args[9], &action_bits) < 0 || ssize_arg(args[10], &rank_mask) < 0) {
        return NULL;
    }
    if (first < 0 || level_shift <= 0 || level_shift > 62 || action_bits < 0 || action_bits > 62 || rank_mask < 0) {
        PyErr_SetString(PyExc_ValueError, "merge: bad first, level_shift, action_bits or rank_mask");
        return NULL;
    }
    Py_ssize_t nw = PySequence_Size(args[0]);
    Py_ssize_t nm = PySequence_Size(args[6]);
    if (nw < 0 || nm < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    Py_buffer *keys = NULL, *fps = NULL, *outm = NULL, **masks = NULL;
    Py_buffer of = {0}, od = {0}, op = {0};
    int have_of = 0, have_od = 0, have_op = 0;
    Py_ssize_t *pos = NULL, *level_start = NULL, *lens = NULL;
    PyObject *mask_seq = PySequence_Fast(args[2], "masks");
    if (mask_seq == NULL) {
        return NULL;
    }
    if (PySequence_Fast_GET_SIZE(mask_seq) != nw) {
        PyErr_SetString(PyExc_ValueError, "masks: one list of runs per worker");
        goto done;
    }
    if ((keys = views_of(args[0], nw, 8, 0, "keys")) == NULL || (fps = views_of(args[1], nw, 8, 0, "fps")) == NULL
            || (outm = views_of(args[6], nm, 8, 1, "out_masks")) == NULL) {
        goto done;
    }
    masks = PyMem_Calloc((size_t)(nw > 0 ? nw : 1), sizeof *masks);
    pos = PyMem_Calloc((size_t)(nw > 0 ? nw : 1), sizeof *pos);
    lens = PyMem_Calloc((size_t)(nw > 0 ? nw : 1), sizeof *lens);
    if (masks == NULL || pos == NULL || lens == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t r = 0; r < nw; r++) {
        lens[r] = keys[r].len / 8;
        total += lens[r];
        if (fps[r].len / 8 != lens[r]) {
            PyErr_SetString(PyExc_ValueError, "merge: a worker's fingerprints and keys differ in number");
            goto done;
        }
        masks[r] = views_of(PySequence_Fast_GET_ITEM(mask_seq, r), nm, 8, 0, "masks");
        if (masks[r] == NULL) {
            goto done;
        }
        for (Py_ssize_t k = 0; k < nm; k++) {
            if (masks[r][k].len / 8 != lens[r]) {
                PyErr_SetString(PyExc_ValueError, "merge: a worker's masks and keys differ in number");
                goto done;
            }
        }
    }
    if (words(args[3], &of, 8, 1, "out_fps") < 0) {
        goto done;
    }
    have_of = 1;
    if (words(args[4], &od, 4, 1, "out_depth") < 0) {
        goto done;
    }
    have_od = 1;
    if (words(args[5], &op, 4, 1, "out_parent") < 0) {
        goto done;
    }
    have_op = 1;
    Py_ssize_t n = first + total;
    int sized = of.len / 8 == n && od.len / 4 == n && op.len / 4 == n;
    for (Py_ssize_t k = 0; k < nm; k++) {
        sized = sized && outm[k].len / 8 == n;
    }
    if (!sized || n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "merge: every output must hold first + the settled states (< 2**31)");
        goto done;
    }
    int64_t *out_fps = (int64_t *)of.buf;
    int32_t *out_depth = (int32_t *)od.buf, *out_parent = (int32_t *)op.buf;
    /* level_start[l]: the number of level l's first state; level 0 is the initial states */
    Py_ssize_t levels_cap = 64, levels = 2;
    level_start = PyMem_Malloc((size_t)levels_cap * sizeof *level_start);
    if (level_start == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    level_start[0] = 0;
    level_start[1] = first;
    int64_t last_key = INT64_MIN;
    for (Py_ssize_t v = first; v < n; v++) {
        /* the smallest head among the runs (ties to the lower worker, as the Python merge) */
        Py_ssize_t w = -1;
        int64_t best = 0;
        for (Py_ssize_t r = 0; r < nw; r++) {
            if (pos[r] < lens[r]) {
                int64_t k = word_at(&keys[r], pos[r]);
                if (w < 0 || k < best) {
                    w = r;
                    best = k;
                }
            }
        }
        Py_ssize_t i = pos[w]++;
        int64_t lv = best >> level_shift;
        if (best < last_key || lv < levels - 1 || lv < 1) {
            PyErr_SetString(PyExc_ValueError, "merge: the keys are not in discovery order");
            goto done;
        }
        last_key = best;
        while (levels - 1 < lv) {  /* a new level begins where the last one ended */
            if (levels == levels_cap) {
                Py_ssize_t *grown = PyMem_Realloc(level_start, (size_t)(2 * levels_cap) * sizeof *grown);
                if (grown == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                level_start = grown;
                levels_cap *= 2;
            }
            level_start[levels++] = v;
        }
        int64_t par = (int64_t)level_start[lv - 1] + ((best >> action_bits) & (int64_t)rank_mask);
        if (par >= level_start[lv]) {
            PyErr_SetString(PyExc_ValueError, "merge: a key's rank lies outside its parent's level");
            goto done;
        }
        out_fps[v] = word_at(&fps[w], i);
        out_depth[v] = (int32_t)lv;
        out_parent[v] = (int32_t)par;
        for (Py_ssize_t k = 0; k < nm; k++) {
            ((int64_t *)outm[k].buf)[v] = word_at(&masks[w][k], i);
        }
    }
    result = Py_NewRef(Py_None);
done:
    if (masks != NULL) {
        for (Py_ssize_t r = 0; r < nw; r++) {
            release_views(masks[r], nm);
        }
        PyMem_Free(masks);
    }
    release_views(keys, nw);
    release_views(fps, nw);
    release_views(outm, nm);
    if (have_of) {
        PyBuffer_Release(&of);
    }
    if (have_od) {
        PyBuffer_Release(&od);
    }
    if (have_op) {
        PyBuffer_Release(&op);
    }
    PyMem_Free(pos);
    PyMem_Free(lens);
    PyMem_Free(level_start);
    Py_DECREF(mask_seq);
    return result;
}

/* rows: see the top of the file. Worker r's steps are srcs[r][k] -> dsts[r][k] (state numbers)
 * with its own fair label labs[r][k] (-1: none); canon[r][l] names the instance of its label l
 * among every worker's (a canonical number, the same for the same instance), and glob[c] is the
 * graph's label of canonical c, -2 while it has none: the first step to take it gives it the next
 * label, counting from `next` (the labels the graph already has). The graph's rows go to
 * out_offsets[1 ..], out_dst and out_label (sized to the states + 1 and the steps). Returns the
 * canonical numbers given a label, in the order they were given one. A worker's sources must come
 * in ascending state order (it expands its held states level by level, each level in key order),
 * each source in one run and with one worker. */
static PyObject *
assemble_rows(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "rows(srcs, dsts, labs, canon, glob, next, out_offsets, out_dst, out_label)");
        return NULL;
    }
    Py_ssize_t nw = PySequence_Size(args[0]);
    Py_ssize_t next;
    if (nw < 0 || ssize_arg(args[5], &next) < 0) {
        return NULL;
    }
    PyObject *result = NULL, *fresh = NULL;
    Py_buffer *srcs = NULL, *dsts = NULL, *labs = NULL, *canon = NULL;
    Py_buffer gb = {0}, oo = {0}, odst = {0}, olab = {0};
    int have_gb = 0, have_oo = 0, have_od = 0, have_ol = 0;
    Py_ssize_t *pos = NULL;
    if ((srcs = views_of(args[0], nw, 4, 0, "srcs")) == NULL || (dsts = views_of(args[1], nw, 4, 0, "dsts")) == NULL
            || (labs = views_of(args[2], nw, 4, 0, "labs")) == NULL
            || (canon = views_of(args[3], nw, 4, 0, "canon")) == NULL) {
        goto done;
    }
    if (words(args[4], &gb, 4, 1, "glob") < 0) {
        goto done;
    }
    have_gb = 1;
    if (words(args[6], &oo, 8, 1, "out_offsets") < 0) {
        goto done;
    }
    have_oo = 1;
    if (words(args[7], &odst, 4, 1, "out_dst") < 0) {
        goto done;
    }
    have_od = 1;
    if (words(args[8], &olab, 4, 1, "out_label") < 0) {
        goto done;
    }
    have_ol = 1;
    Py_ssize_t n = oo.len / 8 - 1, edges = 0;
    for (Py_ssize_t r = 0; r < nw; r++) {
        edges += srcs[r].len / 4;
        if (dsts[r].len != srcs[r].len || labs[r].len != srcs[r].len) {
            PyErr_SetString(PyExc_ValueError, "rows: a worker's sources, targets and labels differ in number");
            goto done;
        }
    }
    if (n < 0 || n > INT32_MAX || odst.len / 4 != edges || olab.len / 4 != edges) {
        PyErr_SetString(PyExc_ValueError, "rows: out_offsets must hold the states + 1, out_dst and out_label the steps");
        goto done;
    }
    pos = PyMem_Calloc((size_t)(nw > 0 ? nw : 1), sizeof *pos);
    fresh = PyList_New(0);
    if (pos == NULL || fresh == NULL) {
        if (pos == NULL) {
            PyErr_NoMemory();
        }
        goto done;
    }
    int64_t *offsets = (int64_t *)oo.buf;
    int32_t *out_dst = (int32_t *)odst.buf, *out_label = (int32_t *)olab.buf, *glob = (int32_t *)gb.buf;
    Py_ssize_t nglob = gb.len / 4;
    Py_ssize_t e = 0;
    offsets[0] = 0;
    for (int32_t v = 0; v < n; v++) {
        for (Py_ssize_t r = 0; r < nw; r++) {
            const int32_t *src = (const int32_t *)srcs[r].buf;
            Py_ssize_t m = srcs[r].len / 4, k = pos[r];
            if (k < m && src[k] < v) {
                PyErr_SetString(PyExc_ValueError, "rows: a worker's sources are not in state order");
                goto done;
            }
            if (k >= m || src[k] != v) {
                continue;
            }
            const int32_t *dst = (const int32_t *)dsts[r].buf, *lab = (const int32_t *)labs[r].buf;
            const int32_t *cmap = (const int32_t *)canon[r].buf;
            Py_ssize_t ncanon = canon[r].len / 4;
            for (; k < m && src[k] == v; k++, e++) {
                if (dst[k] < 0 || dst[k] >= n) {
                    PyErr_SetString(PyExc_ValueError, "rows: a step leads outside the graph");
                    goto done;
                }
                int32_t l = lab[k];
                if (l >= 0) {
                    int32_t c = l < ncanon ? cmap[l] : -1;
                    if (c < 0 || c >= nglob) {
                        PyErr_SetString(PyExc_ValueError, "rows: a label has no instance");
                        goto done;
                    }
                    if (glob[c] == -2) {  /* the first step of this instance: the graph's next label */
                        PyObject *x = PyLong_FromSsize_t(c);
                        if (x == NULL || PyList_Append(fresh, x) < 0) {
                            Py_XDECREF(x);
                            goto done;
                        }
                        Py_DECREF(x);
                        glob[c] = (int32_t)next++;
                    }
                    l = glob[c];
                }
                out_dst[e] = dst[k];
                out_label[e] = l;
            }
            pos[r] = k;
        }
        offsets[v + 1] = e;
    }
    for (Py_ssize_t r = 0; r < nw; r++) {
        if (pos[r] != srcs[r].len / 4) {
            PyErr_SetString(PyExc_ValueError, "rows: a worker's sources are not in state order, or outside the graph");
            goto done;
        }
    }
    result = Py_NewRef(fresh);
done:
    Py_XDECREF(fresh);
    release_views(srcs, nw);
    release_views(dsts, nw);
    release_views(labs, nw);
    release_views(canon, nw);
    if (have_gb) {
        PyBuffer_Release(&gb);
    }
    if (have_oo) {
        PyBuffer_Release(&oo);
    }
    if (have_od) {
        PyBuffer_Release(&odst);
    }
    if (have_ol) {
        PyBuffer_Release(&olab);
    }
    PyMem_Free(pos);
    return result;
}

static PyMethodDef assemble_methods[] = {
    {"merge", (PyCFunction)(void (*)(void))assemble_merge, METH_FASTCALL,
     "merge(keys, fps, masks, out_fps, out_depth, out_parent, out_masks, first, level_shift, action_bits, "
     "rank_mask): the settled states numbered in discovery-key order"},
    {"rows", (PyCFunction)(void (*)(void))assemble_rows, METH_FASTCALL,
     "rows(srcs, dsts, labs, canon, glob, next, out_offsets, out_dst, out_label): each state's steps as its row; "
     "the canonical labels given a graph label, in order"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef assemble_module = {
    PyModuleDef_HEAD_INIT, "_assemble", "A parallel search's liveness graph, assembled from the workers' parts.", -1,
    assemble_methods,
};

PyMODINIT_FUNC
PyInit__assemble(void)
{
    return PyModule_Create(&assemble_module);
}
