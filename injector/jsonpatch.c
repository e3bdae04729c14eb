/* injector/jsonpatch.c — see jsonpatch.h. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/err.h"
#include "injector/jsonpatch.h"

/* ---- JSON Pointer paths, grown as the diff descends ---- */

struct path {
	char *buf;
	size_t len, cap;
	bool oom;
};

/* Appends "/" and the escaped token; returns the length to cut back to. */
static size_t path_push(struct path *p, const char *tok)
{
	size_t keep = p->len;
	size_t need = p->len + 2 + 2 * strlen(tok);
	if (need > p->cap || !p->buf) {
		size_t cap = p->cap ? p->cap : 128;
		while (cap < need)
			cap *= 2;
		char *nb = realloc(p->buf, cap);
		if (!nb) {
			p->oom = true;
			return keep;
		}
		p->buf = nb;
		p->cap = cap;
	}
	p->buf[p->len++] = '/';
	for (const char *c = tok; *c; c++) {
		if (*c == '~' || *c == '/') {
			p->buf[p->len++] = '~';
			p->buf[p->len++] = *c == '~' ? '0' : '1';
		} else {
			p->buf[p->len++] = *c;
		}
	}
	p->buf[p->len] = '\0';
	return keep;
}

static void path_pop(struct path *p, size_t keep)
{
	p->len = keep;
	if (p->buf)
		p->buf[keep] = '\0';
}

static void emit(cJSON *ops, struct path *p, const char *op, const cJSON *value)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "op", op);
	cJSON_AddStringToObject(o, "path", p->buf ? p->buf : "");
	if (value && !cJSON_AddItemToObject(o, "value", cJSON_Duplicate(value, 1)))
		p->oom = true;
	if (!o || !cJSON_GetObjectItemCaseSensitive(o, "path") || !cJSON_AddItemToArray(ops, o)) {
		cJSON_Delete(o);
		p->oom = true;
	}
}

/* true/false are different cJSON types, which is what JSON means too: a change of boolean is a replace. */
static int kind(const cJSON *x) { return x->type & 0xff; }

static void diff(cJSON *ops, struct path *p, const cJSON *a, const cJSON *b)
{
	if (kind(a) != kind(b)) {
		emit(ops, p, "replace", b);
		return;
	}
	if (cJSON_IsObject(a)) {
		const cJSON *x;
		cJSON_ArrayForEach(x, a) {
			if (!cJSON_GetObjectItemCaseSensitive(b, x->string)) {
				size_t k = path_push(p, x->string);
				emit(ops, p, "remove", NULL);
				path_pop(p, k);
			}
		}
		cJSON_ArrayForEach(x, b) {
			const cJSON *old = cJSON_GetObjectItemCaseSensitive(a, x->string);
			size_t k = path_push(p, x->string);
			if (old)
				diff(ops, p, old, x);
			else
				emit(ops, p, "add", x);
			path_pop(p, k);
		}
		return;
	}
	if (cJSON_IsArray(a)) {
		if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) {
			emit(ops, p, "replace", b);
			return;
		}
		const cJSON *x = a->child, *y = b->child;
		for (unsigned i = 0; x && y; i++, x = x->next, y = y->next) {
			char idx[16];
			(void)snprintf(idx, sizeof(idx), "%u", i);
			size_t k = path_push(p, idx);
			diff(ops, p, x, y);
			path_pop(p, k);
		}
		return;
	}
	if (!cJSON_Compare(a, b, 1))
		emit(ops, p, "replace", b);
}

cJSON *sk_jsonpatch_diff(const cJSON *a, const cJSON *b)
{
	cJSON *ops = cJSON_CreateArray();
	struct path p = { 0 };
	if (!ops)
		return NULL;
	diff(ops, &p, a, b);
	free(p.buf);
	if (p.oom) {
		cJSON_Delete(ops);
		return NULL;
	}
	return ops;
}

/* ---- applying (tests and fuzzing) ---- */

/* Splits off the next reference token of *ptr into tok (unescaped); false when it is malformed. */
static bool next_token(const char **ptr, char *tok, size_t toksz)
{
	const char *s = *ptr;
	if (*s != '/')
		return false;
	s++;
	size_t n = 0;
	while (*s && *s != '/') {
		char c = *s++;
		if (c == '~') {
			if (*s != '0' && *s != '1')
				return false;
			c = *s++ == '0' ? '~' : '/';
		}
		if (n + 1 >= toksz)
			return false;
		tok[n++] = c;
	}
	tok[n] = '\0';
	*ptr = s;
	return true;
}

/* An array index: "0" or digits without a leading zero; "-" (append) only where allowed. */
static bool parse_index(const char *tok, int size, bool dash_ok, int *out)
{
	if (dash_ok && !strcmp(tok, "-")) {
		*out = size;
		return true;
	}
	if (!*tok || (tok[0] == '0' && tok[1]) || strlen(tok) > 9)
		return false;
	for (const char *c = tok; *c; c++)
		if (*c < '0' || *c > '9')
			return false;
	*out = atoi(tok);
	return true;
}

#define TOK_MAX 1024

/* A copy of an operation's value without the key it had there ("value"), to be placed under its own. */
static cJSON *dup_value(const cJSON *value)
{
	cJSON *v = cJSON_Duplicate(value, 1);
	if (v && v->string) {
		if (!(v->type & cJSON_StringIsConst))
			cJSON_free(v->string);
		v->string = NULL;
		v->type &= ~cJSON_StringIsConst;
	}
	return v;
}

static int apply_one(cJSON **doc, const char *op, const char *path, const cJSON *value, unsigned i,
		     struct sk_err *err)
{
	bool add = !strcmp(op, "add"), rm = !strcmp(op, "remove"), repl = !strcmp(op, "replace");
	if (!add && !rm && !repl)
		return sk_err_set(err, EINVAL, "patch[%u]: op '%.32s' is not add, remove or replace", i, op);
	if ((add || repl) != (value != NULL))
		return sk_err_set(err, EINVAL, "patch[%u]: %s %s a value", i, op, value ? "takes no" : "needs");
	if (!*path) {
		if (rm)
			return sk_err_set(err, EINVAL, "patch[%u]: cannot remove the whole document", i);
		cJSON *v = dup_value(value);
		if (!v)
			return -ENOMEM;
		cJSON_Delete(*doc);
		*doc = v;
		return 0;
	}
	cJSON *parent = *doc;
	char tok[TOK_MAX];
	const char *s = path;
	for (;;) {
		if (!next_token(&s, tok, sizeof(tok)))
			return sk_err_set(err, EINVAL, "patch[%u]: path '%.200s' is not a JSON Pointer", i, path);
		if (!*s)
			break;
		cJSON *child = NULL;
		int idx;
		if (cJSON_IsObject(parent))
			child = cJSON_GetObjectItemCaseSensitive(parent, tok);
		else if (cJSON_IsArray(parent) && parse_index(tok, cJSON_GetArraySize(parent), false, &idx))
			child = cJSON_GetArrayItem(parent, idx);
		if (!child)
			return sk_err_set(err, EINVAL, "patch[%u]: path '%.200s' does not exist", i, path);
		parent = child;
	}
	if (cJSON_IsObject(parent)) {
		cJSON *cur = cJSON_GetObjectItemCaseSensitive(parent, tok);
		if ((rm || repl) && !cur)
			return sk_err_set(err, EINVAL, "patch[%u]: path '%.200s' does not exist", i, path);
		if (rm) {
			cJSON_Delete(cJSON_DetachItemViaPointer(parent, cur));
			return 0;
		}
		cJSON *v = dup_value(value);
		if (!v)
			return -ENOMEM;
		if (cur)
			return cJSON_ReplaceItemInObjectCaseSensitive(parent, tok, v) ? 0 : (cJSON_Delete(v), -ENOMEM);
		return cJSON_AddItemToObject(parent, tok, v) ? 0 : (cJSON_Delete(v), -ENOMEM);
	}
	if (cJSON_IsArray(parent)) {
		int size = cJSON_GetArraySize(parent), idx;
		if (!parse_index(tok, size, add, &idx) || idx > size || (!add && idx == size))
			return sk_err_set(err, EINVAL, "patch[%u]: path '%.200s': no such index", i, path);
		if (rm) {
			cJSON_DeleteItemFromArray(parent, idx);
			return 0;
		}
		cJSON *v = dup_value(value);
		if (!v)
			return -ENOMEM;
		bool ok = repl ? cJSON_ReplaceItemInArray(parent, idx, v)
			       : idx == size ? cJSON_AddItemToArray(parent, v) : cJSON_InsertItemInArray(parent, idx, v);
		if (!ok) {
			cJSON_Delete(v);
			return -ENOMEM;
		}
		return 0;
	}
	return sk_err_set(err, EINVAL, "patch[%u]: path '%.200s': parent is not a container", i, path);
}

int sk_jsonpatch_apply(cJSON **doc, const cJSON *patch, struct sk_err *err)
{
	if (!cJSON_IsArray(patch))
		return sk_err_set(err, EINVAL, "patch: expected an array of operations");
	unsigned i = 0;
	const cJSON *op;
	cJSON_ArrayForEach(op, patch) {
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(op, "op");
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(op, "path");
		if (!cJSON_IsString(o) || !cJSON_IsString(p))
			return sk_err_set(err, EINVAL, "patch[%u]: expected string op and path", i);
		int r = apply_one(doc, o->valuestring, p->valuestring, cJSON_GetObjectItemCaseSensitive(op, "value"),
				  i, err);
		if (r < 0)
			return r == -ENOMEM ? sk_err_set(err, ENOMEM, "patch[%u]: out of memory", i) : r;
		i++;
	}
	return 0;
}

/* ---- printing ---- */

/* Integers cJSON would print as %g (outside int range) become raw "%.0f" text, exact up to 2^53. */
static bool exact_numbers(cJSON *x)
{
	for (cJSON *c = x->child; c; c = c->next) {
		if (cJSON_IsNumber(c) && isfinite(c->valuedouble) && c->valuedouble == floor(c->valuedouble) &&
		    (c->valuedouble > INT_MAX || c->valuedouble < INT_MIN) && fabs(c->valuedouble) <= 9007199254740992.0) {
			char num[32];
			(void)snprintf(num, sizeof(num), "%.0f", c->valuedouble);
			cJSON *raw = cJSON_CreateRaw(num);
			/* ViaPointer keeps no key: the replacement carries its own copy */
			if (raw && c->string && !(raw->string = strdup(c->string))) {
				cJSON_Delete(raw);
				return false;
			}
			if (!raw || !cJSON_ReplaceItemViaPointer(x, c, raw)) {
				cJSON_Delete(raw);
				return false;
			}
			c = raw;
		} else if (!exact_numbers(c)) {
			return false;
		}
	}
	return true;
}

char *sk_jsonpatch_print(const cJSON *patch)
{
	cJSON *copy = cJSON_Duplicate(patch, 1);
	char *out = NULL;
	if (!copy)
		return NULL;
	if (cJSON_IsNumber(copy) || exact_numbers(copy)) {
		/* a bare top-level number is not a patch: printed as cJSON prints it */
		out = cJSON_PrintUnformatted(copy);
	}
	cJSON_Delete(copy);
	return out;
}
