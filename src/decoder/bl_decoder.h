/*
 * bl_decoder.h
 *	  Public interface of the binlog decoder: event decoding, table maps,
 *	  row images and column values.
 *
 * A bl_decoder holds the state that spans events of one binlog stream:
 * the FORMAT_DESCRIPTION in force (checksum algorithm, post-header
 * lengths), the table-id -> table map cache, the current GTID, and the
 * reusable buffers that decompressed events and decoded rows live in.
 * Everything a decoded event points to stays valid until the next call
 * of bl_decode_event() (or bl_payload_next()) on the same decoder.
 *
 * A decoder is used by one thread at a time.  It never aborts: every
 * failure is a return of -1 with a bl_error describing the problem, the
 * binlog file and the position of the event.
 */
#ifndef BL_DECODER_H
#define BL_DECODER_H

#include "bl_common.h"
#include "bl_cursor.h"
#include "bl_event_types.h"

#include "bl_charset.h"

/* Column types as they appear in TABLE_MAP events. */
typedef enum bl_mysql_type
{
	BL_T_DECIMAL = 0,
	BL_T_TINY = 1,
	BL_T_SHORT = 2,
	BL_T_LONG = 3,
	BL_T_FLOAT = 4,
	BL_T_DOUBLE = 5,
	BL_T_NULL = 6,
	BL_T_TIMESTAMP = 7,
	BL_T_LONGLONG = 8,
	BL_T_INT24 = 9,
	BL_T_DATE = 10,
	BL_T_TIME = 11,
	BL_T_DATETIME = 12,
	BL_T_YEAR = 13,
	BL_T_NEWDATE = 14,
	BL_T_VARCHAR = 15,
	BL_T_BIT = 16,
	BL_T_TIMESTAMP2 = 17,
	BL_T_DATETIME2 = 18,
	BL_T_TIME2 = 19,
	BL_T_TYPED_ARRAY = 20,
	BL_T_MARIA_BLOB_COMPRESSED = 140,
	BL_T_MARIA_VARCHAR_COMPRESSED = 141,
	BL_T_VECTOR = 242,
	BL_T_JSON = 245,
	BL_T_NEWDECIMAL = 246,
	BL_T_ENUM = 247,
	BL_T_SET = 248,
	BL_T_TINY_BLOB = 249,
	BL_T_MEDIUM_BLOB = 250,
	BL_T_LONG_BLOB = 251,
	BL_T_BLOB = 252,
	BL_T_VAR_STRING = 253,
	BL_T_STRING = 254,
	BL_T_GEOMETRY = 255
} bl_mysql_type;

extern const char *bl_mysql_type_name(uint8_t type);

/* A string that is not NUL-terminated. */
typedef struct bl_str
{
	const char *ptr;
	uint32_t	len;
} bl_str;

/*
 * One column of a table map, with everything needed to decode its values
 * precomputed when the TABLE_MAP event is read.
 */
typedef struct bl_column
{
	uint8_t		type;			/* effective type: STRING resolved to
								 * ENUM/SET, NEWDATE to DATE, ... */
	uint8_t		binlog_type;	/* type byte as found in TABLE_MAP */
	uint16_t	meta;			/* raw metadata word */
	uint32_t	max_length;		/* CHAR/VARCHAR byte length */
	uint8_t		length_bytes;	/* size of the length prefix of
								 * VARCHAR/CHAR/BLOB/JSON/GEOMETRY/VECTOR */
	uint8_t		pack_length;	/* fixed size: ENUM/SET bytes, FLOAT/DOUBLE */
	uint8_t		precision;		/* DECIMAL */
	uint8_t		scale;			/* DECIMAL */
	uint8_t		fsp;			/* fractional seconds digits, 0..6 */
	uint16_t	bits;			/* BIT(n) */
	bool		nullable;
	bool		is_unsigned;	/* from SIGNEDNESS metadata or schema */
	bool		unsigned_known;
	bool		visible;
	bool		is_pk;
	uint16_t	pk_prefix;		/* key prefix length, 0 = whole column */
	uint32_t	collation;		/* 0 = unknown */
	const bl_charset *charset;	/* NULL = unknown (treated as UTF-8) */
	bool		binary;			/* charset is 'binary': values are bytes */
	bl_str		name;			/* ptr NULL = unknown */
	bool		name_plain;		/* name is printable ASCII without quote or
								 * backslash: JSON text as it is */
	uint32_t	n_values;		/* ENUM/SET member strings, if known */
	bl_str	   *values;
	uint32_t	geometry_type;
	uint32_t	vector_dim;
	int32_t		json_ordinal;	/* index among JSON columns, -1 if not JSON */
	bool		compressed;		/* MariaDB COMPRESSED column (binlog_type
								 * BLOB_COMPRESSED or VARCHAR_COMPRESSED;
								 * type says BLOB or VARCHAR): values are
								 * inflated when decoded */
} bl_column;

/* Where a table's column names came from. */
typedef enum bl_names_source
{
	BL_NAMES_NONE = 0,			/* only positions (@1, @2, ...) */
	BL_NAMES_TABLE_MAP,			/* binlog_row_metadata=FULL */
	BL_NAMES_SCHEMA				/* the schema provider (information_schema) */
} bl_names_source;

typedef struct bl_table
{
	uint64_t	table_id;
	uint16_t	flags;
	bl_str		schema;			/* NUL-terminated */
	bl_str		name;			/* NUL-terminated */
	uint32_t	ncols;
	bl_column  *cols;
	uint32_t	npk;
	uint32_t   *pk;				/* column indexes of the primary key */
	uint32_t	njson;
	bl_names_source names_source;
	uint32_t	version;		/* bumped each time this table id is remapped
								 * to a different definition */
	bool		has_compressed; /* a column is compressed */
	/* private: */
	uint8_t    *raw;			/* copy of the TABLE_MAP body, to detect
								 * unchanged re-maps cheaply */
	size_t		raw_len;
	void	   *arena;
} bl_table;

/* Kinds of decoded values. */
typedef enum bl_value_kind
{
	BL_VAL_ABSENT = 0,			/* column not in this image */
	BL_VAL_NULL,
	BL_VAL_INT,					/* v.i */
	BL_VAL_UINT,				/* v.u */
	BL_VAL_FLOAT,				/* v.f */
	BL_VAL_DOUBLE,				/* v.d */
	BL_VAL_DECIMAL,				/* v.raw: MySQL binary decimal */
	BL_VAL_STRING,				/* v.raw in the column's charset */
	BL_VAL_BINARY,				/* v.raw, binary charset */
	BL_VAL_BIT,					/* v.u */
	BL_VAL_YEAR,				/* v.i (0 = year 0000) */
	BL_VAL_DATE,				/* v.tm */
	BL_VAL_DATETIME,			/* v.tm */
	BL_VAL_TIME,				/* v.tm (hour may exceed 23; neg) */
	BL_VAL_TIMESTAMP,			/* v.ts */
	BL_VAL_ENUM,				/* v.u, 1-based index, 0 = '' */
	BL_VAL_SET,					/* v.u bitmask */
	BL_VAL_JSON,				/* v.raw, MySQL binary JSON */
	BL_VAL_JSON_DIFF,			/* v.raw, partial update diff vector */
	BL_VAL_GEOMETRY,			/* v.raw: 4-byte SRID + WKB */
	BL_VAL_VECTOR				/* v.raw: float32 little-endian */
} bl_value_kind;

typedef struct bl_temporal
{
	uint32_t	year;
	uint8_t		month;
	uint8_t		day;
	uint8_t		minute;
	uint8_t		second;
	uint32_t	hour;			/* TIME can reach 838 */
	uint32_t	usec;
	bool		neg;			/* TIME only */
} bl_temporal;

typedef struct bl_value
{
	uint8_t		kind;			/* bl_value_kind */
	union
	{
		int64_t		i;
		uint64_t	u;
		float		f;
		double		d;
		struct
		{
			const uint8_t *ptr;
			uint32_t	len;
		}			raw;
		bl_temporal tm;
		struct
		{
			int64_t		sec;
			uint32_t	usec;
		}			ts;
	}			v;
} bl_value;

/* A decoded row image: one value per table column. */
typedef struct bl_row
{
	bl_value   *values;
	uint32_t	ncols;
	const uint8_t *image;		/* raw bytes of this image in the event */
	size_t		image_len;
} bl_row;

/* A rows event ready for iteration with bl_rows_next(). */
typedef struct bl_rows_event
{
	const bl_table *table;		/* NULL if the table id was not mapped */
	uint64_t	table_id;
	bl_op		op;
	uint16_t	flags;
	bool		partial;		/* PARTIAL_UPDATE_ROWS */
	uint32_t	width;			/* columns in the event */
	const uint8_t *present_before;	/* bitmaps, width bits */
	const uint8_t *present_after;
	uint32_t	npresent_before;
	uint32_t	npresent_after;
	const uint8_t *rows_data;	/* all row data of the event */
	size_t		rows_len;
	bl_cur		rows;			/* remaining row data */
	uint32_t	row_index;
	uint64_t	pos;			/* position of the event, for errors */
} bl_rows_event;

/* A GTID of either flavour, as text, plus the fields around it. */
typedef struct bl_gtid_info
{
	char		text[128];		/* "uuid:n", "uuid:tag:n" or "d-s-n"; "" =
								 * anonymous */
	uint8_t		flags;
	uint64_t	last_committed;
	uint64_t	sequence_number;
	uint64_t	commit_ts_us;	/* immediate commit timestamp, microseconds */
	uint64_t	original_commit_ts_us;
	uint64_t	transaction_length;
	uint32_t	domain_id;		/* MariaDB */
	uint64_t	seq_no;			/* MariaDB sequence number or MySQL gno */
	bool		standalone;		/* MariaDB FL_STANDALONE: no BEGIN follows */
	bool		is_ddl;			/* MariaDB FL_DDL */
	uint64_t	commit_id;		/* MariaDB FL_GROUP_COMMIT_ID: the group
								 * commit's id; 0 = none */
} bl_gtid_info;

/*
 * What the source says about a transaction's dependencies, from its GTID
 * event (bl_gtid_hint_of): MariaDB's group commit id (transactions that
 * committed in one group commit held their row locks at the same time, so
 * none waits for another), or MySQL's logical clock (last_committed: the
 * sequence_number of the last transaction it may depend on).  Counters
 * of both restart with each binlog file: compare hints of one file only.
 */
typedef enum bl_gtid_hint_kind
{
	BL_HINT_NONE = 0,
	BL_HINT_MARIA_GROUP = 1,	/* a = commit id */
	BL_HINT_MYSQL_CLOCK = 2		/* a = last_committed, b = sequence_number */
} bl_gtid_hint_kind;

typedef struct bl_gtid_hint
{
	uint32_t	kind;			/* bl_gtid_hint_kind */
	uint64_t	a;
	uint64_t	b;
} bl_gtid_hint;

typedef struct bl_event
{
	/* common header */
	uint32_t	timestamp;
	uint8_t		type;
	uint32_t	server_id;
	uint32_t	size;			/* as in the header (incl. checksum) */
	uint32_t	next_pos;		/* log_pos of the header */
	uint16_t	flags;

	uint64_t	pos;			/* where the event starts in its file */
	bool		in_payload;		/* came out of a TRANSACTION_PAYLOAD */
	bool		checksum_verified;
	const uint8_t *body;		/* after the common header, before the
								 * checksum */
	size_t		body_len;

	union
	{
		struct
		{
			uint16_t	binlog_version;
			char		server_version[51];
			uint32_t	created;
			uint8_t		checksum_alg;
		}			fde;
		struct
		{
			uint64_t	position;
			bl_str		file;
			bool		fake;	/* sent by the server before its FDE */
		}			rotate;
		struct
		{
			uint32_t	thread_id;
			uint32_t	exec_time;
			uint16_t	error_code;
			uint16_t	charset_client;	/* collation ids, 0 if absent */
			uint16_t	collation_server;
			bl_str		db;
			bl_str		sql;
		}			query;
		struct
		{
			uint64_t	xid;
		}			xid;
		bl_gtid_info gtid;		/* GTID, ANONYMOUS_GTID, GTID_TAGGED,
								 * MARIA_GTID */
		struct
		{
			bl_str		text;	/* set text in dec->scratch */
		}			gtid_set;	/* PREVIOUS_GTIDS, MARIA_GTID_LIST */
		struct
		{
			bl_str		file;
		}			checkpoint;
		struct
		{
			bl_str		file;
			uint64_t	position;	/* 0 if unknown */
		}			heartbeat;
		struct
		{
			bl_str		sql;
		}			annotate;	/* ANNOTATE_ROWS, ROWS_QUERY */
		struct
		{
			uint8_t		kind;
			uint64_t	value;
		}			intvar;
		struct
		{
			uint64_t	seed1;
			uint64_t	seed2;
		}			rand;
		struct
		{
			bl_str		name;
			bool		is_null;
			uint8_t		value_type;
			uint32_t	charset;
			bl_str		value;
		}			user_var;
		struct
		{
			uint16_t	kind;
			bl_str		message;
		}			incident;
		struct
		{
			bool		one_phase;
			uint32_t	format_id;
			bl_str		gtrid;
			bl_str		bqual;
		}			xa_prepare;
		struct
		{
			uint32_t	compression;	/* 0 = zstd, 255 = none */
			uint64_t	uncompressed_size;
			const uint8_t *data;	/* decompressed inner events */
			size_t		len;
		}			payload;
		const bl_table *table_map;
		bl_rows_event rows;
	}			u;
} bl_event;

/*
 * Column definitions from outside the binlog (information_schema), used
 * when TABLE_MAP events carry no names (binlog_row_metadata=MINIMAL).
 */
typedef struct bl_schema_column
{
	const char *name;
	const char *data_type;		/* information_schema DATA_TYPE, lowercase */
	bool		is_unsigned;
	const char *charset_name;	/* NULL for non-character columns */
	uint32_t	n_values;		/* ENUM/SET members */
	const char **values;
	bool		is_pk;
} bl_schema_column;

typedef struct bl_schema_table
{
	uint32_t	ncols;
	const bl_schema_column *cols;
	/*
	 * Not NULL: the provider knows the table but not its definition here
	 * (why, as a sentence fragment); a TABLE_MAP without column names is
	 * then an error instead of columns without names.
	 */
	const char *unknown;
} bl_schema_table;

/*
 * Returns the definition of schema.table, or NULL if unknown.  The result
 * must stay valid until the provider is asked again.
 */
typedef const bl_schema_table *(*bl_schema_lookup_fn) (void *arg,
													   const char *schema,
													   const char *table);

typedef struct bl_decoder_options
{
	bool		verify_checksum;	/* default true */
	bl_schema_lookup_fn schema_lookup;
	void	   *schema_arg;

	/*
	 * The provider gives the definition in force at the event's position
	 * (a schema history), not today's: TABLE_MAPs with their own column
	 * names (binlog_row_metadata=FULL) are checked against it too, and
	 * signedness the TABLE_MAP carries must agree.  schema_what names the
	 * provider in errors (default "the source's information_schema").
	 */
	bool		schema_at_position;
	const char *schema_what;
} bl_decoder_options;

typedef struct bl_decoder bl_decoder;

extern void bl_decoder_options_init(bl_decoder_options *opts);
extern bl_decoder *bl_decoder_create(const bl_decoder_options *opts);
extern void bl_decoder_destroy(bl_decoder *dec);

/*
 * Name of the binlog file being read; used in positions and errors.  Names
 * are at most BL_FILE_NAME_MAX - 1 bytes (the servers keep them in buffers
 * of that size; file systems allow 255): after a longer one, every
 * bl_decode_event() fails with an error naming its length, so that no
 * position ever carries a cut name.
 */
#define BL_FILE_NAME_MAX 512
extern void bl_decoder_set_file(bl_decoder *dec, const char *name, size_t len);
extern const char *bl_decoder_file(const bl_decoder *dec);

/*
 * Checksum algorithm to assume for events before the first
 * FORMAT_DESCRIPTION (the fake ROTATE a server sends first in a dump).
 */
extern void bl_decoder_expect_checksum(bl_decoder *dec, uint8_t alg);

/* Forget all table maps (e.g. when the schema provider's cache changed). */
extern void bl_decoder_reset_tables(bl_decoder *dec);

/*
 * Decode one whole event (header + body + checksum, `len` bytes starting
 * at `data`, `pos` its position in the file).  Returns 0 or -1.
 */
extern int	bl_decode_event(bl_decoder *dec, const uint8_t *data, size_t len,
							uint64_t pos, bl_event *ev, bl_error *err);

/*
 * After a TRANSACTION_PAYLOAD event: decode the next inner event into ev.
 * Returns 1 with an event, 0 at the end of the payload, -1 on error.
 */
extern int	bl_payload_next(bl_decoder *dec, bl_event *ev, bl_error *err);

/*
 * Iterate the rows of a rows event.  Returns 1 and fills the images that
 * apply (before for UPDATE/DELETE, after for INSERT/UPDATE; pass NULL for
 * images you do not want), 0 at the end, -1 on error.  The values live in
 * decoder-owned arrays reused by the next call.
 */
extern int	bl_rows_next(bl_decoder *dec, bl_rows_event *rows,
						 bl_row *before, bl_row *after, bl_error *err);

/* Current state, for status and positions. */
extern const bl_gtid_info *bl_decoder_gtid(const bl_decoder *dec);

/*
 * The dependency hint of a transaction from its GTID event (BL_HINT_NONE
 * when the event proves nothing: no group commit id, a non-transactional
 * or XA or DDL group, a MariaDB transaction its source kept out of
 * parallel replication, no logical clock).
 */
extern void bl_gtid_hint_of(const bl_gtid_info *g, bool mariadb, bl_gtid_hint *hint);

/*
 * Does the source prove that later (a transaction after earlier in the
 * same binlog file) does not depend on earlier, so that the two may be
 * applied at the same time?  False whenever either hint is missing.
 */
extern bool bl_gtid_hint_independent(const bl_gtid_hint *earlier,
									 const bl_gtid_hint *later);
extern const char *bl_decoder_server_version(const bl_decoder *dec);
extern bool bl_decoder_is_mariadb(const bl_decoder *dec);
extern uint8_t bl_decoder_checksum_alg(const bl_decoder *dec);

/* Lookup of a mapped table by id (NULL if unknown). */
extern const bl_table *bl_decoder_table(const bl_decoder *dec, uint64_t table_id);

/*
 * Canonical events (bl_serialize.c): a table map and a rows event written
 * back as self-contained binlog events (no checksum), so that they can be
 * stored and decoded later by a decoder in canonical format:
 *   - the table map carries every piece of optional metadata the decoder
 *	   knows (names, signedness, charsets, ENUM/SET strings, key,
 *	   visibility, geometry and vector details), whether it came from the
 *	   binlog or from the schema provider;
 *   - the rows event is decompressed, its extra data dropped, and it
 *	   refers to the table by `table_id`.
 */
extern int	bl_table_serialize(const bl_table *t, uint64_t table_id, bl_buf *out);
extern int	bl_rows_serialize(const bl_event *ev, uint64_t table_id, bl_buf *out);

/*
 * Column filters and masks (bl_rows_edit.c): the rows event ev, its images
 * rewritten with edits[i] for column i of its table: KEEP as it is, DROP
 * out of the images (absent, as in a partial row image), NULL, or VALUE:
 * a non-NULL value of a string column (CHAR, VARCHAR, TEXT, BLOB, BINARY;
 * not COMPRESSED) replaced by the bytes value_fn appends to out (its
 * arguments: the value's bytes).  The new event data lives in out; ev's
 * rows fields point into it, ready for bl_rows_serialize().  Returns 0 or
 * -1 with err set.
 */
typedef enum bl_col_edit
{
	BL_EDIT_KEEP = 0,
	BL_EDIT_DROP,
	BL_EDIT_NULL,
	BL_EDIT_VALUE
} bl_col_edit;

typedef void (*bl_edit_value_fn) (void *arg, uint32_t col, const uint8_t *value,
								  size_t len, bl_buf *out);

extern bool bl_column_editable(const bl_column *col);
extern int	bl_rows_edit(bl_decoder *dec, bl_event *ev, const uint8_t *edits,
						 bl_edit_value_fn value_fn, void *arg, bl_buf *out,
						 bl_error *err);
/* Set up a decoder to read canonical events (no FORMAT_DESCRIPTION). */
extern void bl_decoder_set_canonical_format(bl_decoder *dec);

/* Low level helpers shared by the decoder files. */
extern uint32_t bl_crc32(uint32_t crc, const uint8_t *data, size_t len);
extern int	bl_decimal_binary_size(int precision, int scale);

#endif							/* BL_DECODER_H */
