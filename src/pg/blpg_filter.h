/*
 * blpg_filter.h
 *	  include/exclude regular expressions on "schema.table", applied by the
 *	  worker before changes reach the store.
 */
#ifndef BLPG_FILTER_H
#define BLPG_FILTER_H

#include "postgres.h"

typedef struct blpg_filter blpg_filter;

/* NULL patterns mean "everything" / "nothing". */
extern blpg_filter *blpg_filter_create(const char *include, const char *exclude);
extern bool blpg_filter_match(blpg_filter *f, const char *schema, size_t schema_len,
							  const char *table, size_t table_len);

#endif							/* BLPG_FILTER_H */
