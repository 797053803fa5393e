/* skill_eval._fastjson: a compiled fast path for strict.loads_json / strict.loads_jsonl.
 *
 * loads(text) returns the parsed value when `text` is *plainly* a valid strict JSON document,
 * else NotImplemented ("decline"): the caller then takes the pure-Python path, which words
 * every refusal. loads_lines(text) does the same for JSON Lines.
 *
 * The contract: never accept what strict.py refuses, and return exactly what it returns
 * (same values, same types, same dict key order). So anything unusual declines:
 *   - a duplicate key at any depth (seen as a dict that did not grow on insertion);
 *   - nesting of FJ_DEPTH_LIMIT open containers (strict.MAX_DEPTH is 64; the bound also keeps
 *     the recursion here shallow);
 *   - an integer token of more than FJ_MAX_INT_DIGITS digits, a float that parses to +-inf;
 *   - a raw control character (< 0x20) in a string, an invalid escape, a \uD800-\uDFFF escape
 *     that is not a high surrogate directly followed by a low one (a pair combines, as in json);
 *   - a text holding a lone surrogate (it has no UTF-8 form), a leading BOM (not a value),
 *     trailing data, NaN / Infinity, and everything else outside the JSON grammar.
 * Numbers follow the grammar -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? exactly; integers
 * come from PyLong_FromString (or an exact long long for up to 18 digits), floats from
 * PyOS_string_to_double on the token (what float() and json use). Whitespace is space, \t,
 * \n and \r only.
 *
 * The input is untrusted: every read is bounded by the parser's `end` (the UTF-8 buffer is
 * also NUL-terminated, which bounds the C library parsers), recursion is bounded by the depth
 * limit, and every Python API failure is propagated as an exception (NULL with an exception
 * set), while a decline is NULL with no exception set.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#define FJ_DEPTH_LIMIT 48     /* decline on the 48th open container (strict.MAX_DEPTH is 64) */
#define FJ_MAX_INT_DIGITS 30  /* strict.MAX_INT_DIGITS */
#define FJ_STACK_STRING 256   /* escaped strings up to this many raw bytes decode on the stack */

typedef struct {
    const unsigned char *p;    /* the next byte to read */
    const unsigned char *end;  /* one past the last byte this parse may read */
    int depth;                 /* containers open */
} Parser;

static PyObject *parse_value(Parser *ps);

static inline int
is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static inline void
skip_ws(Parser *ps)
{
    const unsigned char *p = ps->p;
    const unsigned char *end = ps->end;
    while (p < end && is_ws(*p)) {
        p++;
    }
    ps->p = p;
}

static inline int
is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* The value of 4 hex digits at p (the caller checked that p + 4 <= end), or -1. */
static int
hex4(const unsigned char *p)
{
    int value = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        int d;
        if (c >= '0' && c <= '9') {
            d = c - '0';
        }
        else if (c >= 'a' && c <= 'f') {
            d = c - 'a' + 10;
        }
        else if (c >= 'A' && c <= 'F') {
            d = c - 'A' + 10;
        }
        else {
            return -1;
        }
        value = (value << 4) | d;
    }
    return value;
}

/* Write code point cp (not a surrogate, <= 0x10FFFF) as UTF-8; returns the bytes written (1-4). */
static int
put_utf8(unsigned char *o, Py_UCS4 cp)
{
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decode the raw string body [p, q) (no unescaped '"' or control byte: the caller checked) into
 * out, which has room for q - p bytes (no escape is shorter than what it decodes to: \n is 2 bytes
 * for 1, \uXXXX 6 for at most 3, a surrogate pair 12 for 4). Returns the length written, or -1 to
 * decline (an invalid escape or a lone surrogate). */
static Py_ssize_t
unescape(const unsigned char *p, const unsigned char *q, unsigned char *out)
{
    unsigned char *o = out;
    while (p < q) {
        unsigned char c = *p;
        if (c != '\\') {
            *o++ = c;
            p++;
            continue;
        }
        if (q - p < 2) {
            return -1;
        }
        switch (p[1]) {
        case '"': *o++ = '"'; p += 2; break;
        case '\\': *o++ = '\\'; p += 2; break;
        case '/': *o++ = '/'; p += 2; break;
        case 'b': *o++ = '\b'; p += 2; break;
        case 'f': *o++ = '\f'; p += 2; break;
        case 'n': *o++ = '\n'; p += 2; break;
        case 'r': *o++ = '\r'; p += 2; break;
        case 't': *o++ = '\t'; p += 2; break;
        case 'u': {
            int cp;
            if (q - p < 6 || (cp = hex4(p + 2)) < 0) {
                return -1;
            }
            p += 6;
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return -1;  /* a low surrogate with no high one before it */
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                int low;
                if (q - p < 6 || p[0] != '\\' || p[1] != 'u' || (low = hex4(p + 2)) < 0
                        || low < 0xDC00 || low > 0xDFFF) {
                    return -1;  /* a high surrogate not followed by a low one */
                }
                p += 6;
                cp = 0x10000 + (((cp - 0xD800) << 10) | (low - 0xDC00));
            }
            o += put_utf8(o, (Py_UCS4)cp);
            break;
        }
        default:
            return -1;
        }
    }
    return o - out;
}

/* A string starting at the '"' under ps->p. */
static PyObject *
parse_string(Parser *ps)
{
    const unsigned char *start = ps->p + 1;
    const unsigned char *end = ps->end;
    const unsigned char *p = start;
    unsigned char high = 0;  /* the OR of the body's bytes: < 0x80 means ASCII */
    int escaped = 0;

    for (;;) {
        if (p >= end) {
            return NULL;  /* unterminated */
        }
        unsigned char c = *p;
        if (c == '"') {
            break;
        }
        if (c == '\\') {
            if (end - p < 2) {
                return NULL;
            }
            escaped = 1;
            p += 2;  /* the escaped byte is checked by unescape */
            continue;
        }
        if (c < 0x20) {
            return NULL;  /* a raw control character */
        }
        high |= c;
        p++;
    }
    Py_ssize_t n = p - start;
    ps->p = p + 1;
    if (!escaped) {
        if (high < 0x80) {
            PyObject *s = PyUnicode_New(n, 127);
            if (s != NULL && n > 0) {
                memcpy(PyUnicode_DATA(s), start, (size_t)n);
            }
            return s;
        }
        /* the body is valid UTF-8: it is a slice, between ASCII quotes, of PyUnicode_AsUTF8's output */
        return PyUnicode_DecodeUTF8((const char *)start, n, NULL);
    }
    unsigned char small[FJ_STACK_STRING];
    unsigned char *buf = small;
    if (n > FJ_STACK_STRING) {
        buf = PyMem_Malloc((size_t)n);
        if (buf == NULL) {
            return PyErr_NoMemory();
        }
    }
    PyObject *s = NULL;
    Py_ssize_t len = unescape(start, p, buf);
    if (len >= 0) {
        s = PyUnicode_DecodeUTF8((const char *)buf, len, NULL);
    }
    if (buf != small) {
        PyMem_Free(buf);
    }
    return s;
}

/* A number token starting at ps->p ('-' or a digit). */
static PyObject *
parse_number(Parser *ps)
{
    const unsigned char *s = ps->p;
    const unsigned char *p = s;
    const unsigned char *end = ps->end;
    int negative = 0;
    int is_float = 0;

    if (*p == '-') {
        negative = 1;
        p++;
    }
    if (p >= end) {
        return NULL;
    }
    const unsigned char *digits = p;
    if (*p == '0') {
        p++;
    }
    else if (*p >= '1' && *p <= '9') {
        while (p < end && is_digit(*p)) {
            p++;
        }
    }
    else {
        return NULL;
    }
    Py_ssize_t ndigits = p - digits;
    if (p < end && *p == '.') {
        p++;
        if (p >= end || !is_digit(*p)) {
            return NULL;
        }
        while (p < end && is_digit(*p)) {
            p++;
        }
        is_float = 1;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) {
            p++;
        }
        if (p >= end || !is_digit(*p)) {
            return NULL;
        }
        while (p < end && is_digit(*p)) {
            p++;
        }
        is_float = 1;
    }

    if (is_float) {
        /* the token is followed by a byte that cannot continue a number, or by the buffer's NUL */
        char *stop = NULL;
        double d = PyOS_string_to_double((const char *)s, &stop, NULL);
        if (d == -1.0 && PyErr_Occurred()) {
            if (PyErr_ExceptionMatches(PyExc_ValueError)) {
                PyErr_Clear();  /* beyond dtoa's digit limit: float() refuses it too, strict.py words it */
            }
            return NULL;  /* else MemoryError: propagated */
        }
        if (stop != (const char *)p || !isfinite(d)) {
            return NULL;  /* 1e400 and the like: strict.py words the refusal */
        }
        ps->p = p;
        return PyFloat_FromDouble(d);
    }
    if (ndigits > FJ_MAX_INT_DIGITS) {
        return NULL;
    }
    ps->p = p;
    if (ndigits <= 18) {
        long long v = 0;
        for (const unsigned char *d = digits; d < p; d++) {
            v = v * 10 + (*d - '0');
        }
        return PyLong_FromLongLong(negative ? -v : v);
    }
    char tok[FJ_MAX_INT_DIGITS + 2];  /* sign, digits, NUL */
    size_t len = (size_t)(p - s);
    memcpy(tok, s, len);
    tok[len] = '\0';
    return PyLong_FromString(tok, NULL, 10);
}

static PyObject *
parse_array(Parser *ps)
{
    if (++ps->depth >= FJ_DEPTH_LIMIT) {
        return NULL;
    }
    ps->p++;  /* '[' */
    PyObject *list = PyList_New(0);
    if (list == NULL) {
        return NULL;
    }
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        ps->depth--;
        return list;
    }
    for (;;) {
        PyObject *item = parse_value(ps);
        if (item == NULL) {
            goto fail;
        }
        int rc = PyList_Append(list, item);
        Py_DECREF(item);
        if (rc < 0) {
            goto fail;
        }
        skip_ws(ps);
        if (ps->p >= ps->end) {
            goto fail;
        }
        if (*ps->p == ',') {
            ps->p++;
            skip_ws(ps);
            continue;
        }
        if (*ps->p == ']') {
            ps->p++;
            break;
        }
        goto fail;
    }
    ps->depth--;
    return list;
fail:
    Py_DECREF(list);
    return NULL;
}

static PyObject *
parse_object(Parser *ps)
{
    if (++ps->depth >= FJ_DEPTH_LIMIT) {
        return NULL;
    }
    ps->p++;  /* '{' */
    PyObject *dict = PyDict_New();
    if (dict == NULL) {
        return NULL;
    }
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        ps->depth--;
        return dict;
    }
    for (;;) {
        if (ps->p >= ps->end || *ps->p != '"') {
            goto fail;
        }
        PyObject *key = parse_string(ps);
        if (key == NULL) {
            goto fail;
        }
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
            Py_DECREF(key);
            goto fail;
        }
        ps->p++;
        skip_ws(ps);
        PyObject *value = parse_value(ps);
        if (value == NULL) {
            Py_DECREF(key);
            goto fail;
        }
        Py_ssize_t before = PyDict_GET_SIZE(dict);
        int rc = PyDict_SetItem(dict, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (rc < 0) {
            goto fail;
        }
        if (PyDict_GET_SIZE(dict) == before) {
            goto fail;  /* a duplicate key: strict.py names it */
        }
        skip_ws(ps);
        if (ps->p >= ps->end) {
            goto fail;
        }
        if (*ps->p == ',') {
            ps->p++;
            skip_ws(ps);
            continue;
        }
        if (*ps->p == '}') {
            ps->p++;
            break;
        }
        goto fail;
    }
    ps->depth--;
    return dict;
fail:
    Py_DECREF(dict);
    return NULL;
}

static PyObject *
parse_literal(Parser *ps, const char *word, size_t len, PyObject *value)
{
    if ((size_t)(ps->end - ps->p) < len || memcmp(ps->p, word, len) != 0) {
        return NULL;
    }
    ps->p += len;
    return Py_NewRef(value);
}

/* A value starting exactly at ps->p (no whitespace skipped). */
static PyObject *
parse_value(Parser *ps)
{
    if (ps->p >= ps->end) {
        return NULL;
    }
    switch (*ps->p) {
    case '{':
        return parse_object(ps);
    case '[':
        return parse_array(ps);
    case '"':
        return parse_string(ps);
    case 't':
        return parse_literal(ps, "true", 4, Py_True);
    case 'f':
        return parse_literal(ps, "false", 5, Py_False);
    case 'n':
        return parse_literal(ps, "null", 4, Py_None);
    case '-': case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
        return parse_number(ps);
    default:
        return NULL;
    }
}

/* The UTF-8 of `text` (NUL-terminated, owned by `text`), or NULL: with an exception set on a real
 * error, without one to decline (not a str, or a str holding a lone surrogate). */
static const unsigned char *
utf8_of(PyObject *text, Py_ssize_t *size)
{
    if (!PyUnicode_Check(text)) {
        return NULL;
    }
    const char *buf = PyUnicode_AsUTF8AndSize(text, size);
    if (buf == NULL && PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
        PyErr_Clear();
    }
    return (const unsigned char *)buf;
}

static PyObject *
declined(void)
{
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_RETURN_NOTIMPLEMENTED;
}

static PyObject *
fastjson_loads(PyObject *Py_UNUSED(module), PyObject *text)
{
    Py_ssize_t size = 0;
    const unsigned char *buf = utf8_of(text, &size);
    if (buf == NULL) {
        return declined();
    }
    Parser ps = {buf, buf + size, 0};
    skip_ws(&ps);
    PyObject *value = parse_value(&ps);
    if (value == NULL) {
        return declined();
    }
    skip_ws(&ps);
    if (ps.p != ps.end) {
        Py_DECREF(value);
        return declined();  /* trailing data */
    }
    return value;
}

static PyObject *
fastjson_loads_lines(PyObject *Py_UNUSED(module), PyObject *text)
{
    Py_ssize_t size = 0;
    const unsigned char *buf = utf8_of(text, &size);
    if (buf == NULL) {
        return declined();
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    const unsigned char *pos = buf;
    const unsigned char *end = buf + size;
    while (pos < end) {
        const unsigned char *nl = memchr(pos, '\n', (size_t)(end - pos));
        const unsigned char *line_end = nl != NULL ? nl : end;
        /* one value, starting at the line's first byte (a blank or padded line is no value start)
         * and ending at its newline: no raw newline is inside a valid value, so none is crossed */
        Parser ps = {pos, line_end, 0};
        PyObject *value = parse_value(&ps);
        if (value == NULL) {
            goto fail;
        }
        if (ps.p != line_end) {
            Py_DECREF(value);
            goto fail;
        }
        int rc = PyList_Append(out, value);
        Py_DECREF(value);
        if (rc < 0) {
            goto fail;
        }
        if (nl == NULL) {
            break;
        }
        pos = nl + 1;
    }
    return out;
fail:
    Py_DECREF(out);
    return declined();
}

PyDoc_STRVAR(loads_doc,
"loads(text, /)\n--\n\n"
"The value of `text` when it is plainly a valid strict JSON document, else NotImplemented\n"
"(strict.loads_json then parses it the careful way and words any refusal).");

PyDoc_STRVAR(loads_lines_doc,
"loads_lines(text, /)\n--\n\n"
"The values of `text` as strict JSON Lines (one value per line, each starting at its line's\n"
"first character and ending at its newline), else NotImplemented.");

static PyMethodDef fastjson_methods[] = {
    {"loads", fastjson_loads, METH_O, loads_doc},
    {"loads_lines", fastjson_loads_lines, METH_O, loads_lines_doc},
    {NULL, NULL, 0, NULL},
};

static int
fastjson_exec(PyObject *module)
{
    if (PyModule_AddIntConstant(module, "DEPTH_LIMIT", FJ_DEPTH_LIMIT) < 0) {
        return -1;
    }
    if (PyModule_AddIntConstant(module, "MAX_INT_DIGITS", FJ_MAX_INT_DIGITS) < 0) {
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot fastjson_slots[] = {
    {Py_mod_exec, fastjson_exec},
    {0, NULL},
};

static struct PyModuleDef fastjson_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "skill_eval._fastjson",
    .m_doc = "A compiled fast path for strict JSON and JSON Lines parsing (see strict.py).",
    .m_size = 0,
    .m_methods = fastjson_methods,
    .m_slots = fastjson_slots,
};

PyMODINIT_FUNC
PyInit__fastjson(void)
{
    return PyModuleDef_Init(&fastjson_module);
}
