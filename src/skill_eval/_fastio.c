/* skill_eval._fastio: one bundle directory walked and read in C (the evidence pass's common case).
 *
 * read_bundle(path, max_bytes, max_total) -> (metas, names, files) | None
 *
 * What fsio.scan_below(real_root, path, "meta.json", links, names, paths) and fsio.open_plain give for
 * a bundle directory holding no symlink, in one call: `metas` the paths of the entries named
 * meta.json at any depth (unordered), `names` the names of the directory's own entries, `files` the
 * bytes of its regular files by relative path ("/"-separated), each read as open_plain reads it
 * (O_NOFOLLOW | O_NONBLOCK, fstat: a regular file within max_bytes, read whole), captured stdout and
 * stderr streams (captured/N.out, captured/N.err) left out (read on demand), as a file open_plain
 * would not return is. None ("decline") whenever the directory is anything but that plain case: a
 * symlink anywhere, an entry whose type the directory does not say, a directory that cannot be
 * opened or listed, more than max_total bytes of files in all, an error of any kind. The caller then walks and reads it in Python, which words
 * every refusal. Nothing here follows a symlink (O_NOFOLLOW on every open, entries by dirfd).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 16
#define MAX_ENTRIES 4096

typedef struct {
    PyObject *metas;      /* list[str] */
    PyObject *names;      /* set[str] */
    PyObject *files;      /* dict[str, bytes] */
    Py_ssize_t max_bytes;
    Py_ssize_t left; /* bytes the files may still take in all (max_total) */
    long entries;
} walk_t;

/* 1: done, 0: decline (no Python error set), -1: Python error set. */
static int read_file(walk_t *w, int dirfd, const char *name, PyObject *rel) {
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 1; /* open_plain: MISSING or None: not read here, the caller reads it carefully */
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > w->max_bytes) {
        close(fd);
        return 1;
    }
    Py_ssize_t size = (Py_ssize_t)st.st_size;
    if (size > w->left) { /* over the bundle's budget: the caller reads it in Python */
        close(fd);
        return 0;
    }
    w->left -= size;
    PyObject *data = PyBytes_FromStringAndSize(NULL, size + 1);
    if (data == NULL) {
        close(fd);
        return -1;
    }
    char *buf = PyBytes_AS_STRING(data);
    Py_ssize_t got = 0;
    while (got < size + 1) { /* one byte more than fstat said: a file that grew is not read whole */
        ssize_t n = read(fd, buf + got, (size_t)(size + 1 - got));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (n == 0)
            break;
        got += n;
    }
    close(fd);
    if (got != size) { /* short, grown or unreadable: open_plain returns None */
        Py_DECREF(data);
        return 1;
    }
    if (_PyBytes_Resize(&data, size) != 0)
        return -1;
    int rc = PyDict_SetItem(w->files, rel, data);
    Py_DECREF(data);
    return rc == 0 ? 1 : -1;
}

/* a + b + c + d decoded as Python decodes file names (the filesystem encoding, surrogateescape):
 * the spelling os.scandir gives an entry's path and name. */
static PyObject *decode_join(const char *a, const char *b, const char *c, const char *d) {
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c), ld = strlen(d);
    char *buf = PyMem_Malloc(la + lb + lc + ld + 1);
    if (buf == NULL)
        return PyErr_NoMemory();
    memcpy(buf, a, la);
    memcpy(buf + la, b, lb);
    memcpy(buf + la + lb, c, lc);
    memcpy(buf + la + lb + lc, d, ld);
    buf[la + lb + lc + ld] = '\0';
    PyObject *out = PyUnicode_DecodeFSDefaultAndSize(buf, (Py_ssize_t)(la + lb + lc + ld));
    PyMem_Free(buf);
    return out;
}

static int is_stream(const char *prefix, const char *name) {
    /* captured/<anything>.out or .err, directly below captured/ */
    if (strcmp(prefix, "captured/") != 0)
        return 0;
    size_t n = strlen(name);
    return n >= 4 && (strcmp(name + n - 4, ".out") == 0 || strcmp(name + n - 4, ".err") == 0);
}

/* Walk the open directory `dirfd` (consumed), whose path is `path` and relative prefix `prefix`
 * ("" at the top, else "a/b/"). */
static int walk(walk_t *w, int dirfd, const char *path, const char *prefix, int depth) {
    if (depth > MAX_DEPTH) {
        close(dirfd);
        return 0;
    }
    DIR *dir = fdopendir(dirfd);
    if (dir == NULL) {
        close(dirfd);
        return 0;
    }
    int rc = 1;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(dir);
        if (e == NULL) {
            if (errno != 0)
                rc = 0; /* a listing that fails part-way: the Python walk decides */
            break;
        }
        const char *name = e->d_name;
        if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
            continue;
        if (++w->entries > MAX_ENTRIES) {
            rc = 0;
            break;
        }
        unsigned char type = e->d_type;
        if (type == DT_LNK || type == DT_UNKNOWN) {
            rc = 0; /* a symlink (links, refusals) or an unknown type: the Python walk */
            break;
        }
        if (depth == 0) {
            PyObject *n = PyUnicode_DecodeFSDefault(name);
            if (n == NULL || PySet_Add(w->names, n) != 0) {
                Py_XDECREF(n);
                rc = -1;
                break;
            }
            Py_DECREF(n);
        }
        if (strcmp(name, "meta.json") == 0) {
            PyObject *m = decode_join(path, "/", prefix, name);
            if (m == NULL || PyList_Append(w->metas, m) != 0) {
                Py_XDECREF(m);
                rc = -1;
                break;
            }
            Py_DECREF(m);
        }
        if (type == DT_DIR) {
            int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                rc = 0;
                break;
            }
            size_t plen = strlen(prefix), nlen = strlen(name);
            char *next = PyMem_Malloc(plen + nlen + 2);
            if (next == NULL) {
                close(sub);
                PyErr_NoMemory();
                rc = -1;
                break;
            }
            memcpy(next, prefix, plen);
            memcpy(next + plen, name, nlen);
            next[plen + nlen] = '/';
            next[plen + nlen + 1] = '\0';
            rc = walk(w, sub, path, next, depth + 1);
            PyMem_Free(next);
            if (rc != 1)
                break;
        } else if (type == DT_REG) {
            if (is_stream(prefix, name))
                continue;
            PyObject *rel = decode_join(prefix, name, "", "");
            if (rel == NULL) {
                rc = -1;
                break;
            }
            rc = read_file(w, dirfd, name, rel);
            Py_DECREF(rel);
            if (rc != 1)
                break;
        }
        /* other types (FIFO, socket, device): listed (names, meta.json), never read */
    }
    closedir(dir); /* closes dirfd */
    return rc;
}

static PyObject *read_bundle(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *path_obj;
    Py_ssize_t max_bytes, max_total;
    if (!PyArg_ParseTuple(args, "Unn", &path_obj, &max_bytes, &max_total))
        return NULL;
    PyObject *encoded = PyUnicode_EncodeFSDefault(path_obj);
    if (encoded == NULL)
        return NULL;
    const char *path = PyBytes_AS_STRING(encoded);
    if ((Py_ssize_t)strlen(path) != PyBytes_GET_SIZE(encoded)) { /* an embedded NUL */
        Py_DECREF(encoded);
        Py_RETURN_NONE;
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        Py_DECREF(encoded);
        Py_RETURN_NONE;
    }
    walk_t w = {PyList_New(0), PySet_New(NULL), PyDict_New(), max_bytes, max_total, 0};
    if (w.metas == NULL || w.names == NULL || w.files == NULL) {
        close(fd);
        Py_DECREF(encoded);
        Py_XDECREF(w.metas);
        Py_XDECREF(w.names);
        Py_XDECREF(w.files);
        return NULL;
    }
    int rc = walk(&w, fd, path, "", 0);
    Py_DECREF(encoded);
    if (rc != 1) {
        Py_DECREF(w.metas);
        Py_DECREF(w.names);
        Py_DECREF(w.files);
        if (rc < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(NNN)", w.metas, w.names, w.files);
}

static PyMethodDef methods[] = {
    {"read_bundle", read_bundle, METH_VARARGS,
     "read_bundle(path, max_bytes, max_total) -> (metas, names, files) | None: a link-free bundle directory walked and read"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "skill_eval._fastio", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fastio(void) { return PyModule_Create(&module); }
