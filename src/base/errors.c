/*
 * errors.c
 *	  Decoder and source errors as PostgreSQL errors: SQLSTATE per error
 *	  class, and the context (source, binlog file, position) in the report;
 *	  arguments that must not be null.
 */
#include "base/base.h"

int
blpg_errcode(bl_errcode code)
{
	switch (code)
	{
		case BL_OK:
			return ERRCODE_SUCCESSFUL_COMPLETION;
		case BL_ERR_TRUNCATED:
		case BL_ERR_CORRUPT:
		case BL_ERR_CHECKSUM:
			return ERRCODE_DATA_CORRUPTED;
		case BL_ERR_UNSUPPORTED:
			return ERRCODE_FEATURE_NOT_SUPPORTED;
		case BL_ERR_IO:
			return ERRCODE_IO_ERROR;
		case BL_ERR_NOMEM:
			return ERRCODE_OUT_OF_MEMORY;
		case BL_ERR_SCHEMA:
			return ERRCODE_DATATYPE_MISMATCH;
	}
	return ERRCODE_INTERNAL_ERROR;
}

void
blpg_require_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));
}

void
blpg_report_decoder_error(int elevel, const bl_error *err, const char *source)
{
	ereport(elevel,
			(errcode(blpg_errcode(err->code)),
			 errmsg("could not decode binlog %s at position %llu: %s",
					err->file[0] ? err->file : "(unknown file)",
					(unsigned long long) err->position, err->message),
			 source ? errcontext("binlog source %s, file %s, position %llu",
								 source, err->file[0] ? err->file : "(unknown)",
								 (unsigned long long) err->position) : 0));
}
