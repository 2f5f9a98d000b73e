/*
 * binlog_fdw.c
 *	  Module entry point of binlog_fdw: library load (_PG_init).
 */
#include "postgres.h"

#include "fmgr.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
}
