/*
 * rundb.h — reading helpers over an opened run database, shared by
 * report.c, check.c and diff.c (internal to the analyzer).
 */
#ifndef FSC_ANALYZER_RUNDB_H
#define FSC_ANALYZER_RUNDB_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "fragscope/analyzer.h"

/* A summary value, or dflt when the key is absent. */
double fsc__rundb_summary(sqlite3 *db, const char *key, double dflt);
int64_t fsc__rundb_summary_int(sqlite3 *db, const char *key, int64_t dflt);
int64_t fsc__rundb_meta_int(sqlite3 *db, const char *key, int64_t dflt);
void fsc__rundb_meta_text(sqlite3 *db, const char *key, char *buf, size_t cap);

#endif
