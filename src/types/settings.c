/*
 * settings.c
 *	  The apply settings of a source: its server options conflict,
 *	  unmapped, tinyint1_boolean, zero_date, time_type, keyless and
 *	  schema_map (checked by the validator, src/base/options.c), read into
 *	  a blpg_apply_options.
 */
#include "types/types.h"

#include "commands/defrem.h"
#include "foreign/foreign.h"

void
blpg_apply_options_load(Oid serverid, blpg_apply_options *opts)
{
	ForeignServer *server = GetForeignServer(serverid);
	ListCell   *lc;

	memset(opts, 0, sizeof(*opts));
	opts->conflict = BLPG_CONFLICT_ERROR;
	opts->unmapped_error = true;
	opts->zero_date = BLPG_ZERO_NULL;
	opts->time_as_interval = true;
	foreach(lc, server->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);
		const char *v = defGetString(def);

		if (strcmp(def->defname, "conflict") == 0)
			opts->conflict = strcmp(v, "skip") == 0 ? BLPG_CONFLICT_SKIP :
				strcmp(v, "overwrite") == 0 ? BLPG_CONFLICT_OVERWRITE : BLPG_CONFLICT_ERROR;
		else if (strcmp(def->defname, "unmapped") == 0)
			opts->unmapped_error = strcmp(v, "skip") != 0;
		else if (strcmp(def->defname, "tinyint1_boolean") == 0)
			opts->tinyint1_boolean = strcmp(v, "true") == 0 || strcmp(v, "on") == 0;
		else if (strcmp(def->defname, "zero_date") == 0)
			opts->zero_date = strcmp(v, "-infinity") == 0 ? BLPG_ZERO_NEG_INFINITY :
				strcmp(v, "error") == 0 ? BLPG_ZERO_ERROR : BLPG_ZERO_NULL;
		else if (strcmp(def->defname, "time_type") == 0)
			opts->time_as_interval = strcmp(v, "time") != 0;
		else if (strcmp(def->defname, "keyless") == 0)
			opts->keyless_full_row = strcmp(v, "full_row") == 0;
		else if (strcmp(def->defname, "schema_map") == 0)
		{
			/* "mysql_db:pg_schema,..." */
			char	   *copy = pstrdup(v);
			char	   *tok;
			char	   *save;

			for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			{
				char	   *colon = strchr(tok, ':');

				if (colon == NULL)
					continue;
				*colon = '\0';
				opts->schema_map = lappend(opts->schema_map,
										   list_make2(makeString(pstrdup(tok)),
													  makeString(pstrdup(colon + 1))));
			}
		}
	}
}
