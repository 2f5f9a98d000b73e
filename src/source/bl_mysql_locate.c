/*
 * bl_mysql_locate.c
 *	  Start positions found by reading the source's binlogs: the first
 *	  transaction at or after a time, or the first transaction whose GTID
 *	  is not in a MySQL GTID set (bl_mysql_source.h); and the GTID set
 *	  executed at a position, read the same way.
 *
 * Both pick a file first, newest to oldest, from what its first events
 * say (the first transaction's timestamp; the PREVIOUS_GTIDS set), then
 * read from the start of that file, over later files, until a transaction
 * qualifies.  Reads use non-blocking dumps on connections of their own,
 * which end at the end of the binlog: when nothing qualifies the answer is
 * that end.  A GTID set missing transactions from purged binlogs is an
 * error, never a silent skip.
 *
 * Transaction starts: a GTID event of either flavour (GTID, ANONYMOUS_GTID,
 * GTID_TAGGED, MariaDB GTID), or, on servers without GTID events, a QUERY
 * outside a transaction (BEGIN or a DDL statement).
 */
#include "bl_mysql_source.h"
#include "bl_gtid_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum locate_mode
{
	LOCATE_TIME,
	LOCATE_GTID
} locate_mode;

typedef struct locator
{
	locate_mode mode;
	int64_t		unix_time;
	bl_gtid_set *set;
	const bl_source_options *opts;
} locator;

typedef struct dump_reader
{
	bl_source  *src;
	bl_decoder *dec;
	bool		in_txn;
} dump_reader;

static bool
is_gtid_event(uint8_t type)
{
	return type == BL_EV_GTID || type == BL_EV_ANONYMOUS_GTID ||
		type == BL_EV_GTID_TAGGED || type == BL_EV_MARIA_GTID;
}

static int
reader_open(dump_reader *r, const bl_source_options *opts, const char *file, bl_error *err)
{
	bl_source_options o = *opts;
	bl_decoder_options dopts;

	memset(r, 0, sizeof(*r));
	o.until_end = true;
	bl_decoder_options_init(&dopts);
	dopts.verify_checksum = false;	/* only a few events are decoded */
	r->dec = bl_decoder_create(&dopts);
	if (r->dec == NULL)
		return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	r->src = bl_source_connect(&o, err);
	if (r->src == NULL)
		return -1;
	return bl_source_start_dump_at(r->src, r->dec, file, 4, NULL, err);
}

static void
reader_close(dump_reader *r)
{
	bl_source_close(r->src);
	if (r->dec)
		bl_decoder_destroy(r->dec);
	memset(r, 0, sizeof(*r));
}

/*
 * Next event of interest.  Returns 1 with ev decoded (FDE, GTID events,
 * QUERY, PREVIOUS_GTIDS; others carry only their header fields) and
 * *txn_start set when a transaction starts at it, 0 at the end of the
 * binlog, -1 on error.
 */
static int
reader_next(dump_reader *r, bl_event *ev, bool *txn_start, bl_error *err)
{
	for (;;)
	{
		const uint8_t *data;
		size_t		len;
		uint64_t	pos;
		uint8_t		type;
		int			rc = bl_source_next(r->src, r->dec, &data, &len, &pos, err);

		if (rc <= 0)
			return rc;
		type = data[4];
		*txn_start = false;
		if (type == BL_EV_FORMAT_DESCRIPTION || is_gtid_event(type) ||
			type == BL_EV_QUERY || type == BL_EV_PREVIOUS_GTIDS)
		{
			if (bl_decode_event(r->dec, data, len, pos, ev, err) != 0)
				return -1;
		}
		else
		{
			memset(ev, 0, sizeof(*ev));
			ev->type = type;
			ev->timestamp = (uint32_t) bl_load_le(data, 4);
			ev->pos = pos;
		}
		if (pos == 0 || type == BL_EV_ROTATE || type == BL_EV_HEARTBEAT ||
			type == BL_EV_HEARTBEAT_V2)
			continue;
		if (is_gtid_event(type))
		{
			*txn_start = true;
			r->in_txn = true;
		}
		else if (type == BL_EV_QUERY)
		{
			bool		begin = ev->u.query.sql.len == 5 &&
				strncasecmp(ev->u.query.sql.ptr, "BEGIN", 5) == 0;

			if (!r->in_txn)
				*txn_start = true;
			r->in_txn = begin;
		}
		else if (type == BL_EV_XID)
			r->in_txn = false;
		return 1;
	}
}

/* The transaction's time: MySQL's commit timestamp, else the header's. */
static int64_t
txn_time(const bl_event *ev)
{
	if (ev->type != BL_EV_QUERY && ev->u.gtid.commit_ts_us != 0 && ev->type != BL_EV_MARIA_GTID)
		return (int64_t) (ev->u.gtid.commit_ts_us / 1000000);
	return (int64_t) ev->timestamp;
}

static bool
qualifies(const locator *l, const bl_event *ev)
{
	if (l->mode == LOCATE_TIME)
		return txn_time(ev) >= l->unix_time;
	/* GTID mode: a transaction the replica has not executed */
	if (ev->type == BL_EV_GTID || ev->type == BL_EV_GTID_TAGGED)
		return !bl_gtid_set_contains(l->set, ev->u.gtid.text);
	return true;				/* anonymous: never in a GTID set */
}

/*
 * What the start of a file says: 1 if reading may start at it (its first
 * transaction is not after the time; its PREVIOUS_GTIDS are all in the
 * set), 0 if not, -1 on error.
 */
static int
probe_file(const locator *l, const char *file, bl_error *err)
{
	dump_reader r;
	bl_event	ev;
	bool		start;
	int			rc;
	int			verdict = 0;

	if (reader_open(&r, l->opts, file, err) != 0)
	{
		reader_close(&r);
		return -1;
	}
	while ((rc = reader_next(&r, &ev, &start, err)) == 1)
	{
		if (strcmp(bl_source_file(r.src), file) != 0)
			break;				/* the file has no transaction */
		if (l->mode == LOCATE_GTID && ev.type == BL_EV_PREVIOUS_GTIDS)
		{
			bl_gtid_set *prev = bl_gtid_set_parse(ev.u.gtid_set.text.ptr,
												  ev.u.gtid_set.text.len, err);

			if (prev == NULL)
			{
				rc = -1;
				break;
			}
			verdict = bl_gtid_set_subset(prev, l->set) ? 1 : 0;
			bl_gtid_set_free(prev);
			break;
		}
		if (l->mode == LOCATE_GTID && (start || ev.type == BL_EV_MARIA_GTID_LIST))
		{
			rc = bl_error_set(err, BL_ERR_UNSUPPORTED,
							  "binlog %s has no PREVIOUS_GTIDS event: a MySQL GTID set start needs a MySQL server with GTIDs (MariaDB takes gtid:domain-server-seq lists)",
							  file);
			break;
		}
		if (l->mode == LOCATE_TIME && start)
		{
			verdict = txn_time(&ev) <= l->unix_time ? 1 : 0;
			break;
		}
	}
	reader_close(&r);
	if (rc < 0)
		return -1;
	return verdict;
}

/* Read from file's start to the first qualifying transaction. */
static int
scan_from(const locator *l, const char *file, char *out, size_t outlen, uint64_t *pos,
		  bl_error *err)
{
	dump_reader r;
	bl_event	ev;
	bool		start;
	int			rc;

	if (reader_open(&r, l->opts, file, err) != 0)
	{
		reader_close(&r);
		return -1;
	}
	while ((rc = reader_next(&r, &ev, &start, err)) == 1)
		if (start && qualifies(l, &ev))
		{
			snprintf(out, outlen, "%s", bl_source_file(r.src));
			*pos = ev.pos;
			reader_close(&r);
			return 0;
		}
	if (rc == 0)
	{
		/* nothing qualifies: the end of the binlog */
		snprintf(out, outlen, "%s", bl_source_file(r.src));
		*pos = bl_source_position(r.src);
	}
	reader_close(&r);
	return rc < 0 ? -1 : 0;
}

static int
locate(const locator *l, char *file, size_t filelen, uint64_t *pos, bl_error *err)
{
	bl_source *src = bl_source_connect(l->opts, err);
	char	  **files;
	int			nfiles;
	int			from = -1;
	int			rc;

	if (src == NULL)
		return -1;
	rc = bl_source_list_files(src, &files, &nfiles, err);
	bl_source_close(src);
	if (rc != 0)
		return -1;
	for (int i = nfiles - 1; i >= 0 && from < 0; i--)
	{
		int			v = probe_file(l, files[i], err);

		if (v < 0)
		{
			bl_source_free_files(files, nfiles);
			return -1;
		}
		if (v == 1)
			from = i;
	}
	if (from < 0)
	{
		if (l->mode == LOCATE_GTID)
		{
			rc = bl_error_set(err, BL_ERR_UNSUPPORTED,
							  "the source has purged binlogs with transactions that are not in the GTID set: the oldest binlog, %s, follows transactions the set lacks",
							  files[0]);
			bl_source_free_files(files, nfiles);
			return rc;
		}
		from = 0;				/* everything is after the time */
	}
	rc = scan_from(l, files[from], file, filelen, pos, err);
	bl_source_free_files(files, nfiles);
	return rc;
}

int
bl_source_locate_time(const bl_source_options *opts, int64_t unix_time,
					  char *file, size_t filelen, uint64_t *pos, bl_error *err)
{
	locator		l;

	memset(&l, 0, sizeof(l));
	l.mode = LOCATE_TIME;
	l.unix_time = unix_time;
	l.opts = opts;
	return locate(&l, file, filelen, pos, err);
}

int
bl_source_locate_gtid_set(const bl_source_options *opts, const char *gtid_set,
						  char *file, size_t filelen, uint64_t *pos, bl_error *err)
{
	locator		l;
	int			rc;

	memset(&l, 0, sizeof(l));
	l.mode = LOCATE_GTID;
	l.opts = opts;
	l.set = bl_gtid_set_parse(gtid_set, strlen(gtid_set), err);
	if (l.set == NULL)
		return -1;
	rc = locate(&l, file, filelen, pos, err);
	bl_gtid_set_free(l.set);
	return rc;
}

/* ---- statements up to the end of the binlog (the schema history's check) ---- */

int
bl_source_scan_statements(const bl_source_options *opts, const char *file, uint64_t pos,
						  const char *gtid_state, bl_source_statement_fn fn, void *arg,
						  bl_error *err)
{
	dump_reader r;
	bl_source_options o = *opts;
	bl_decoder_options dopts;
	int			rc;

	memset(&r, 0, sizeof(r));
	o.until_end = true;
	bl_decoder_options_init(&dopts);
	dopts.verify_checksum = false;
	r.dec = bl_decoder_create(&dopts);
	if (r.dec == NULL)
		return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	r.src = bl_source_connect(&o, err);
	if (r.src == NULL)
	{
		reader_close(&r);
		return -1;
	}
	if (bl_source_start_dump_at(r.src, r.dec, file, pos, file[0] ? NULL : gtid_state, err) != 0)
	{
		reader_close(&r);
		return -1;
	}
	for (;;)
	{
		bl_event	ev;
		bool		txn_start;
		const bl_str *sql;
		char	   *db,
				   *text;
		int			stop;

		rc = reader_next(&r, &ev, &txn_start, err);
		if (rc <= 0)
			break;
		if (ev.type != BL_EV_QUERY)
			continue;
		sql = &ev.u.query.sql;
		if ((sql->len == 5 && strncasecmp(sql->ptr, "BEGIN", 5) == 0) ||
			(sql->len == 6 && strncasecmp(sql->ptr, "COMMIT", 6) == 0))
			continue;
		db = malloc(ev.u.query.db.len + 1);
		text = malloc(sql->len + 1);
		if (db == NULL || text == NULL)
		{
			free(db);
			free(text);
			rc = bl_error_set(err, BL_ERR_NOMEM, "out of memory");
			break;
		}
		memcpy(db, ev.u.query.db.ptr, ev.u.query.db.len);
		db[ev.u.query.db.len] = '\0';
		memcpy(text, sql->ptr, sql->len);
		text[sql->len] = '\0';
		stop = fn(arg, db, text, sql->len, bl_source_file(r.src), ev.pos);
		free(db);
		free(text);
		if (stop)
		{
			rc = 0;
			break;
		}
	}
	reader_close(&r);
	return rc < 0 ? -1 : 0;
}

int
bl_source_gtid_set_at(const bl_source_options *opts, const char *file, uint64_t pos,
					  char **out, bl_error *err)
{
	dump_reader r;
	bl_event	ev;
	bool		start;
	int			rc;
	bl_gtid_set *set = NULL;
	bool		anonymous = false;
	bl_buf		text;

	*out = NULL;
	if (reader_open(&r, opts, file, err) != 0)
	{
		reader_close(&r);
		return -1;
	}
	/* the file's PREVIOUS_GTIDS, then each GTID before pos */
	while ((rc = reader_next(&r, &ev, &start, err)) == 1)
	{
		if (strcmp(bl_source_file(r.src), file) != 0 || ev.pos >= pos)
			break;
		if (ev.type == BL_EV_PREVIOUS_GTIDS && set == NULL)
		{
			set = bl_gtid_set_parse(ev.u.gtid_set.text.ptr, ev.u.gtid_set.text.len, err);
			if (set == NULL)
			{
				rc = -1;
				break;
			}
		}
		else if (ev.type == BL_EV_GTID || ev.type == BL_EV_GTID_TAGGED)
		{
			if (set == NULL)
			{
				rc = bl_error_set(err, BL_ERR_CORRUPT,
								  "binlog %s has a GTID before its PREVIOUS_GTIDS event", file);
				break;
			}
			if (bl_gtid_set_add(set, ev.u.gtid.text, err) != 0)
			{
				rc = -1;
				break;
			}
		}
		else if (ev.type == BL_EV_ANONYMOUS_GTID)
			anonymous = true;
	}
	reader_close(&r);
	if (rc < 0)
	{
		bl_gtid_set_free(set);
		return -1;
	}
	bl_buf_init(&text);
	/* no PREVIOUS_GTIDS, or transactions without GTIDs: no set to tell */
	if (set != NULL && !anonymous && bl_gtid_set_text(set, &text) != 0)
	{
		bl_gtid_set_free(set);
		bl_buf_free(&text);
		return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	}
	bl_gtid_set_free(set);
	*out = strdup(text.data ? text.data : "");
	bl_buf_free(&text);
	if (*out == NULL)
		return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	return 0;
}
