/*
 * binlog_fdw.h
 *	  Declarations shared by the PostgreSQL glue of binlog_fdw (the files of
 *	  src/pg and binlog_fdw.c).  The decoder and the MySQL source are plain C
 *	  and never include this header.
 */
#ifndef BINLOG_FDW_H
#define BINLOG_FDW_H

#include "postgres.h"

#include "fmgr.h"

#include "bl_decoder.h"

/* Raise an ereport(elevel) for a decoder error, naming the source. */
extern void blpg_report_decoder_error(int elevel, const bl_error *err,
									  const char *source);

/* SQLSTATE for a decoder error class. */
extern int	blpg_errcode(bl_errcode code);

/* An error unless argument argno (of a function that is not STRICT) is set. */
extern void blpg_require_arg(FunctionCallInfo fcinfo, int argno, const char *what);

#endif							/* BINLOG_FDW_H */
