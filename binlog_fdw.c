/*
 * binlog_fdw.c
 *	  Module entry point of binlog_fdw: library load (_PG_init), where the
 *	  configuration parameters are defined and the prefix "binlog_fdw" is
 *	  reserved.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "bl_charset.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	/* jsonb cannot store U+0000: row images show it as U+FFFD */
	bl_json_nul_as_replacement = true;

	MarkGUCPrefixReserved("binlog_fdw");
}
