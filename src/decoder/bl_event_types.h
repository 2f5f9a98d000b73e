/*
 * bl_event_types.h
 *	  Binlog event type codes of MySQL 5.0-9.x and MariaDB 10.x/11.x, and
 *	  the handful of protocol constants the decoder needs.
 */
#ifndef BL_EVENT_TYPES_H
#define BL_EVENT_TYPES_H

#include "bl_common.h"

typedef enum bl_event_type
{
	BL_EV_UNKNOWN = 0,
	BL_EV_START_V3 = 1,
	BL_EV_QUERY = 2,
	BL_EV_STOP = 3,
	BL_EV_ROTATE = 4,
	BL_EV_INTVAR = 5,
	BL_EV_LOAD = 6,
	BL_EV_SLAVE = 7,
	BL_EV_CREATE_FILE = 8,
	BL_EV_APPEND_BLOCK = 9,
	BL_EV_EXEC_LOAD = 10,
	BL_EV_DELETE_FILE = 11,
	BL_EV_NEW_LOAD = 12,
	BL_EV_RAND = 13,
	BL_EV_USER_VAR = 14,
	BL_EV_FORMAT_DESCRIPTION = 15,
	BL_EV_XID = 16,
	BL_EV_BEGIN_LOAD_QUERY = 17,
	BL_EV_EXECUTE_LOAD_QUERY = 18,
	BL_EV_TABLE_MAP = 19,
	BL_EV_PRE_GA_WRITE_ROWS = 20,
	BL_EV_PRE_GA_UPDATE_ROWS = 21,
	BL_EV_PRE_GA_DELETE_ROWS = 22,
	BL_EV_WRITE_ROWS_V1 = 23,
	BL_EV_UPDATE_ROWS_V1 = 24,
	BL_EV_DELETE_ROWS_V1 = 25,
	BL_EV_INCIDENT = 26,
	BL_EV_HEARTBEAT = 27,
	BL_EV_IGNORABLE = 28,
	BL_EV_ROWS_QUERY = 29,
	BL_EV_WRITE_ROWS_V2 = 30,
	BL_EV_UPDATE_ROWS_V2 = 31,
	BL_EV_DELETE_ROWS_V2 = 32,
	BL_EV_GTID = 33,
	BL_EV_ANONYMOUS_GTID = 34,
	BL_EV_PREVIOUS_GTIDS = 35,
	BL_EV_TRANSACTION_CONTEXT = 36,
	BL_EV_VIEW_CHANGE = 37,
	BL_EV_XA_PREPARE = 38,
	BL_EV_PARTIAL_UPDATE_ROWS = 39,
	BL_EV_TRANSACTION_PAYLOAD = 40,
	BL_EV_HEARTBEAT_V2 = 41,
	BL_EV_GTID_TAGGED = 42,
	/* MariaDB */
	BL_EV_MARIA_ANNOTATE_ROWS = 160,
	BL_EV_MARIA_BINLOG_CHECKPOINT = 161,
	BL_EV_MARIA_GTID = 162,
	BL_EV_MARIA_GTID_LIST = 163,
	BL_EV_MARIA_START_ENCRYPTION = 164,
	BL_EV_MARIA_QUERY_COMPRESSED = 165,
	BL_EV_MARIA_WRITE_ROWS_COMPRESSED_V1 = 166,
	BL_EV_MARIA_UPDATE_ROWS_COMPRESSED_V1 = 167,
	BL_EV_MARIA_DELETE_ROWS_COMPRESSED_V1 = 168,
	BL_EV_MARIA_WRITE_ROWS_COMPRESSED = 169,
	BL_EV_MARIA_UPDATE_ROWS_COMPRESSED = 170,
	BL_EV_MARIA_DELETE_ROWS_COMPRESSED = 171,
	BL_EV_MARIA_PARTIAL_ROW_DATA = 172
} bl_event_type;

/* Common header of a v4 event; all MySQL >= 5.0 and MariaDB binlogs. */
#define BL_EVENT_HEADER_LEN		19
#define BL_BINLOG_MAGIC			"\xfe" "bin"
#define BL_BINLOG_MAGIC_LEN		4
#define BL_CHECKSUM_LEN			4

/* Checksum algorithms (FORMAT_DESCRIPTION's last byte). */
#define BL_CHECKSUM_OFF			0
#define BL_CHECKSUM_CRC32		1
#define BL_CHECKSUM_UNDEF		255

/* Event header flags. */
#define BL_LOG_EVENT_ARTIFICIAL_F	0x0020
#define BL_LOG_EVENT_IGNORABLE_F	0x0080

/* Rows event flags. */
#define BL_ROWS_STMT_END_F			0x0001

/* Rows event kinds. */
typedef enum bl_op
{
	BL_OP_INSERT = 1,
	BL_OP_UPDATE = 2,
	BL_OP_DELETE = 3
} bl_op;

extern const char *bl_event_type_name(uint8_t type);
extern const char *bl_op_name(bl_op op);

/* Is this one of the row change events (any version, compressed or not)? */
extern bool bl_event_is_rows(uint8_t type);

#endif							/* BL_EVENT_TYPES_H */
