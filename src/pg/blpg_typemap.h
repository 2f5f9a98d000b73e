/*
 * blpg_typemap.h
 *	  MySQL column types to PostgreSQL types, for the tables binlog_fdw
 *	  creates (initial load, CREATE TABLE and ALTER TABLE translation).
 *	  The table is in README.md, "Type mapping".
 */
#ifndef BLPG_TYPEMAP_H
#define BLPG_TYPEMAP_H

#include "blpg_apply.h"

/*
 * A MySQL column type as information_schema.COLUMNS.COLUMN_TYPE writes it
 * ("int(11) unsigned", "varchar(64)", "enum('a','b')", "decimal(10,2)",
 * "datetime(6)", "tinyint(1)") -> a PostgreSQL type name, or NULL if the
 * type is unknown.
 */
extern const char *blpg_map_type(const char *column_type, const blpg_apply_options *opts);

#endif							/* BLPG_TYPEMAP_H */
