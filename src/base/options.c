/*
 * options.c
 *	  The options of binlog_fdw's foreign servers (where and how to connect,
 *	  where to start, what to capture), user mappings (credentials) and
 *	  foreign tables: the check of each option (for the FDW validator,
 *	  src/sql/validator.c, and start()) and the reading of a source's
 *	  configuration.
 *
 * Unknown options and bad values are rejected with the list of valid
 * options or the expected form, as postgres_fdw does.
 */
#include "base/base.h"

#include "access/reloptions.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "lib/stringinfo.h"
#include "catalog/pg_collation.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "regex/regex.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/varlena.h"
#include "utils/timestamp.h"

#include "bl_gtid_set.h"

typedef struct option_def
{
	const char *name;
	Oid			context;		/* catalog the option belongs to */
	const char *help;			/* the expected form */
} option_def;

static const option_def valid_options[] = {
	{"host", ForeignServerRelationId, "a host name or address, or a comma-separated list host1[:port],host2[:port],..."},
	{"port", ForeignServerRelationId, "a port number, 1 to 65535"},
	{"server_id", ForeignServerRelationId, "a replica server id, 1 to 4294967295"},
	{"start", ForeignServerRelationId, "current, earliest, FILE:POS, time:TIMESTAMP, gtid:DOMAIN-SERVER-SEQ[,...] (MariaDB) or gtid:UUID:N-M[,...] (MySQL)"},
	{"include", ForeignServerRelationId, "a regular expression on schema.table"},
	{"exclude", ForeignServerRelationId, "a regular expression on schema.table"},
	{"heartbeat", ForeignServerRelationId, "seconds between heartbeats, 0.1 to 3600"},
	{"connect_timeout", ForeignServerRelationId, "seconds, 1 to 3600"},
	{"ssl_mode", ForeignServerRelationId, "disable, prefer, require, verify-ca or verify-full"},
	{"ssl_ca", ForeignServerRelationId, "a file name"},
	{"ssl_cert", ForeignServerRelationId, "a file name"},
	{"ssl_key", ForeignServerRelationId, "a file name"},
	{"conflict", ForeignServerRelationId, "error, skip or overwrite"},
	{"unmapped", ForeignServerRelationId, "error or skip"},
	{"tinyint1_boolean", ForeignServerRelationId, "true or false"},
	{"zero_date", ForeignServerRelationId, "null, -infinity or error"},
	{"time_type", ForeignServerRelationId, "interval or time"},
	{"keyless", ForeignServerRelationId, "error or full_row"},
	{"schema_map", ForeignServerRelationId, "mysql_db:pg_schema[,...]"},
	{"continuous", ForeignServerRelationId, "true or false (apply changes as they arrive)"},
	{"lost_position", ForeignServerRelationId, "error or reload (when the source has purged the acknowledged position)"},
	{"snapshot_lock", ForeignServerRelationId, "tables (LOCK TABLES of the copied tables) or global (FLUSH TABLES WITH READ LOCK)"},
	{"snapshot_lock_timeout", ForeignServerRelationId, "seconds, 1 to 31536000"},
	{"schema_name", ForeignTableRelationId, "the source table's database (IMPORT FOREIGN SCHEMA sets it)"},
	{"table_name", ForeignTableRelationId, "the source table's name (IMPORT FOREIGN SCHEMA sets it)"},
	{"partial_image", ForeignTableRelationId, "error or null"},
	{"column_name", AttributeRelationId, "the source column's name (IMPORT FOREIGN SCHEMA sets it)"},
	{"user", UserMappingRelationId, "the source account"},
	{"password", UserMappingRelationId, "the source account's password"},
	{NULL, InvalidOid, NULL}
};

static const char *
valid_option_list(Oid catalog)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (const option_def *o = valid_options; o->name; o++)
	{
		if (o->context != catalog)
			continue;
		appendStringInfo(&buf, "%s%s", buf.len ? ", " : "", o->name);
	}
	return buf.len ? buf.data : NULL;
}

static void
bad_value(const char *name, const char *value, const char *form)
{
	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
			 errmsg("invalid value for option \"%s\": \"%s\"", name, value),
			 errhint("Expected %s.", form)));
}

static int64
parse_int(const char *name, const char *value, int64 min, int64 max, const char *form)
{
	char	   *end;
	long long	v;

	errno = 0;
	v = strtoll(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || v < min || v > max)
		bad_value(name, value, form);
	return (int64) v;
}

static double
parse_seconds(const char *name, const char *value, double min, double max, const char *form)
{
	char	   *end;
	double		v;

	errno = 0;
	v = strtod(value, &end);
	if (errno != 0 || end == value || *end != '\0' || !(v >= min && v <= max))
		bad_value(name, value, form);
	return v;
}

static void
check_choice(const char *name, const char *value, const char *form,
			 const char *a, const char *b, const char *c)
{
	if (strcmp(value, a) != 0 && strcmp(value, b) != 0 && (c == NULL || strcmp(value, c) != 0))
		bad_value(name, value, form);
}

static void
start_time_context(void *arg)
{
	errcontext("server option \"start\" = '%s'", (const char *) arg);
}

static void
check_start(const char *value, const char *form)
{
	const char *colon;

	if (strcmp(value, "current") == 0 || strcmp(value, "earliest") == 0)
		return;
	if (strncmp(value, "time:", 5) == 0)
	{
		/* any timestamp PostgreSQL reads; its errors say what is wrong */
		ErrorContextCallback cb;

		cb.callback = start_time_context;
		cb.arg = (void *) value;
		cb.previous = error_context_stack;
		error_context_stack = &cb;
		(void) DirectFunctionCall3(timestamptz_in, CStringGetDatum(value + 5),
								   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
		error_context_stack = cb.previous;
		return;
	}
	if (strncmp(value, "gtid:", 5) == 0 && strchr(value + 5, ':') != NULL)
	{
		/* a MySQL GTID set (uuid:intervals); MariaDB lists have no ':' */
		bl_error	err;
		bl_gtid_set *set;

		memset(&err, 0, sizeof(err));
		set = bl_gtid_set_parse(value + 5, strlen(value + 5), &err);
		if (set == NULL)
			bad_value("start", value, form);
		bl_gtid_set_free(set);
		return;
	}
	if (strncmp(value, "gtid:", 5) == 0)
	{
		const char *p = value + 5;

		/* DOMAIN-SERVER-SEQ, comma-separated: three numbers each */
		for (;;)
		{
			for (int part = 0; part < 3; part++)
			{
				if (!isdigit((unsigned char) *p))
					bad_value("start", value, form);
				while (isdigit((unsigned char) *p))
					p++;
				if (part < 2 && *p++ != '-')
					bad_value("start", value, form);
			}
			if (*p == '\0')
				return;
			if (*p++ != ',')
				bad_value("start", value, form);
		}
	}
	colon = strrchr(value, ':');
	if (colon == NULL || colon == value || strchr(value, '/') != NULL)
		bad_value("start", value, form);
	{
		char	   *end;
		long long	v;

		errno = 0;
		v = strtoll(colon + 1, &end, 10);
		if (errno != 0 || end == colon + 1 || *end != '\0' ||
			!isdigit((unsigned char) colon[1]) || v < 4 || v > INT64CONST(0xFFFFFFFF))
			bad_value("start", value, form);
	}
}

static void
check_regex(const char *name, const char *value)
{
	regex_t		re;
	pg_wchar   *wide;
	int			len;
	int			rc;

	wide = palloc((strlen(value) + 1) * sizeof(pg_wchar));
	len = pg_mb2wchar_with_len(value, wide, strlen(value));
	rc = pg_regcomp(&re, wide, len, REG_ADVANCED, C_COLLATION_OID);
	if (rc != REG_OKAY)
	{
		char		msg[256];

		pg_regerror(rc, &re, msg, sizeof(msg));
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("invalid value for option \"%s\": \"%s\"", name, value),
				 errdetail("Invalid regular expression: %s.", msg),
				 errhint("Expected a regular expression on schema.table, e.g. '^shop\\.(orders|customers)$'.")));
	}
	pg_regfree(&re);
}

void
blpg_check_option(const char *name, const char *value, Oid catalog)
{
	const option_def *def = NULL;
	blpg_host  *hosts;

	for (const option_def *o = valid_options; o->name; o++)
		if (o->context == catalog && strcmp(o->name, name) == 0)
			def = o;
	if (def == NULL)
	{
		const char *valid = valid_option_list(catalog);

		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("invalid option \"%s\"", name),
				 valid ? errhint("Valid options in this context are: %s.", valid) :
				 errhint("There are no valid options in this context.")));
	}

	if (strcmp(name, "port") == 0)
		(void) parse_int(name, value, 1, 65535, def->help);
	else if (strcmp(name, "server_id") == 0)
		(void) parse_int(name, value, 1, INT64CONST(4294967295), def->help);
	else if (strcmp(name, "start") == 0)
		check_start(value, def->help);
	else if (strcmp(name, "include") == 0 || strcmp(name, "exclude") == 0)
		check_regex(name, value);
	else if (strcmp(name, "heartbeat") == 0)
		(void) parse_seconds(name, value, 0.1, 3600, def->help);
	else if (strcmp(name, "connect_timeout") == 0)
		(void) parse_seconds(name, value, 1, 3600, def->help);
	else if (strcmp(name, "ssl_mode") == 0)
	{
		if (strcmp(value, "disable") != 0 && strcmp(value, "prefer") != 0 &&
			strcmp(value, "require") != 0 && strcmp(value, "verify-ca") != 0 &&
			strcmp(value, "verify-full") != 0)
			bad_value(name, value, def->help);
	}
	else if (strcmp(name, "conflict") == 0)
		check_choice(name, value, def->help, "error", "skip", "overwrite");
	else if (strcmp(name, "unmapped") == 0)
		check_choice(name, value, def->help, "error", "skip", NULL);
	else if (strcmp(name, "tinyint1_boolean") == 0 || strcmp(name, "continuous") == 0)
		check_choice(name, value, def->help, "true", "false", NULL);
	else if (strcmp(name, "zero_date") == 0)
		check_choice(name, value, def->help, "null", "-infinity", "error");
	else if (strcmp(name, "time_type") == 0)
		check_choice(name, value, def->help, "interval", "time", NULL);
	else if (strcmp(name, "keyless") == 0)
		check_choice(name, value, def->help, "error", "full_row", NULL);
	else if (strcmp(name, "partial_image") == 0)
		check_choice(name, value, def->help, "error", "null", NULL);
	else if (strcmp(name, "lost_position") == 0)
		check_choice(name, value, def->help, "error", "reload", NULL);
	else if (strcmp(name, "snapshot_lock") == 0)
		check_choice(name, value, def->help, "tables", "global", NULL);
	else if (strcmp(name, "snapshot_lock_timeout") == 0)
		(void) parse_int(name, value, 1, 31536000, def->help);
	else if (strcmp(name, "schema_map") == 0)
	{
		if (strchr(value, ':') == NULL)
			bad_value(name, value, def->help);
	}
	else if (strcmp(name, "host") == 0)
		(void) blpg_hosts_parse(value, 0, &hosts);
	else if (strcmp(name, "user") == 0)
	{
		if (value[0] == '\0')
			bad_value(name, value, def->help);
	}
}

ForeignServer *
blpg_lookup_source(const char *name, AclMode mode)
{
	ForeignServer *server = GetForeignServerByName(name, false);
	ForeignDataWrapper *fdw = GetForeignDataWrapper(server->fdwid);
	AclResult	aclresult;

	if (strcmp(fdw->fdwname, "binlog_fdw") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("server \"%s\" is not a binlog_fdw source", name),
				 errdetail("It uses the foreign-data wrapper \"%s\".", fdw->fdwname)));
	aclresult = pg_foreign_server_aclcheck(server->serverid, GetUserId(), mode);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FOREIGN_SERVER, server->servername);
	return server;
}

blpg_source_config *
blpg_load_config(Oid serverid, Oid userid)
{
	ForeignServer *server = GetForeignServer(serverid);
	UserMapping *um;
	blpg_source_config *cfg = palloc0(sizeof(blpg_source_config));
	ListCell   *lc;

	cfg->serverid = serverid;
	cfg->server_name = pstrdup(server->servername);
	cfg->host = "127.0.0.1";
	cfg->port = 3306;
	/* a default replica id unlikely to clash, stable for the server */
	cfg->server_id = 1000000000 + (int64) (serverid % 1000000);
	cfg->start = "current";
	cfg->heartbeat = 1.0;
	cfg->connect_timeout = 10;
	cfg->ssl_mode = "prefer";
	cfg->snapshot_lock_timeout = 30;

	foreach(lc, server->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);
		const char *v = defGetString(def);

		if (strcmp(def->defname, "host") == 0)
			cfg->host = pstrdup(v);
		else if (strcmp(def->defname, "port") == 0)
			cfg->port = atoi(v);
		else if (strcmp(def->defname, "server_id") == 0)
			cfg->server_id = strtoll(v, NULL, 10);
		else if (strcmp(def->defname, "start") == 0)
			cfg->start = pstrdup(v);
		else if (strcmp(def->defname, "include") == 0)
			cfg->include = pstrdup(v);
		else if (strcmp(def->defname, "exclude") == 0)
			cfg->exclude = pstrdup(v);
		else if (strcmp(def->defname, "heartbeat") == 0)
			cfg->heartbeat = strtod(v, NULL);
		else if (strcmp(def->defname, "connect_timeout") == 0)
			cfg->connect_timeout = strtod(v, NULL);
		else if (strcmp(def->defname, "ssl_mode") == 0)
			cfg->ssl_mode = pstrdup(v);
		else if (strcmp(def->defname, "ssl_ca") == 0)
			cfg->ssl_ca = pstrdup(v);
		else if (strcmp(def->defname, "ssl_cert") == 0)
			cfg->ssl_cert = pstrdup(v);
		else if (strcmp(def->defname, "ssl_key") == 0)
			cfg->ssl_key = pstrdup(v);
		else if (strcmp(def->defname, "lost_position") == 0)
			cfg->lost_position_reload = strcmp(v, "reload") == 0;
		else if (strcmp(def->defname, "snapshot_lock") == 0)
			cfg->snapshot_lock = pstrdup(v);
		else if (strcmp(def->defname, "snapshot_lock_timeout") == 0)
			cfg->snapshot_lock_timeout = atoi(v);
	}

	um = GetUserMapping(userid, serverid);
	foreach(lc, um->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "user") == 0)
			cfg->user = pstrdup(defGetString(def));
		else if (strcmp(def->defname, "password") == 0)
			cfg->password = pstrdup(defGetString(def));
	}
	cfg->nhosts = blpg_hosts_parse(cfg->host, cfg->port, &cfg->hosts);

	if (cfg->user == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				 errmsg("user mapping for server \"%s\" has no \"user\" option", cfg->server_name),
				 errhint("Set it with ALTER USER MAPPING FOR ... SERVER %s OPTIONS (ADD user '...', ADD password '...').",
						 quote_identifier(cfg->server_name))));
	return cfg;
}
