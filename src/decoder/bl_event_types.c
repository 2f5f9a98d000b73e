/*
 * bl_event_types.c
 *	  Names of binlog event types and row operations.
 */
#include "bl_event_types.h"

const char *
bl_event_type_name(uint8_t type)
{
	switch ((bl_event_type) type)
	{
		case BL_EV_UNKNOWN:
			return "UNKNOWN";
		case BL_EV_START_V3:
			return "START_V3";
		case BL_EV_QUERY:
			return "QUERY";
		case BL_EV_STOP:
			return "STOP";
		case BL_EV_ROTATE:
			return "ROTATE";
		case BL_EV_INTVAR:
			return "INTVAR";
		case BL_EV_LOAD:
			return "LOAD";
		case BL_EV_SLAVE:
			return "SLAVE";
		case BL_EV_CREATE_FILE:
			return "CREATE_FILE";
		case BL_EV_APPEND_BLOCK:
			return "APPEND_BLOCK";
		case BL_EV_EXEC_LOAD:
			return "EXEC_LOAD";
		case BL_EV_DELETE_FILE:
			return "DELETE_FILE";
		case BL_EV_NEW_LOAD:
			return "NEW_LOAD";
		case BL_EV_RAND:
			return "RAND";
		case BL_EV_USER_VAR:
			return "USER_VAR";
		case BL_EV_FORMAT_DESCRIPTION:
			return "FORMAT_DESCRIPTION";
		case BL_EV_XID:
			return "XID";
		case BL_EV_BEGIN_LOAD_QUERY:
			return "BEGIN_LOAD_QUERY";
		case BL_EV_EXECUTE_LOAD_QUERY:
			return "EXECUTE_LOAD_QUERY";
		case BL_EV_TABLE_MAP:
			return "TABLE_MAP";
		case BL_EV_PRE_GA_WRITE_ROWS:
			return "PRE_GA_WRITE_ROWS";
		case BL_EV_PRE_GA_UPDATE_ROWS:
			return "PRE_GA_UPDATE_ROWS";
		case BL_EV_PRE_GA_DELETE_ROWS:
			return "PRE_GA_DELETE_ROWS";
		case BL_EV_WRITE_ROWS_V1:
			return "WRITE_ROWS_V1";
		case BL_EV_UPDATE_ROWS_V1:
			return "UPDATE_ROWS_V1";
		case BL_EV_DELETE_ROWS_V1:
			return "DELETE_ROWS_V1";
		case BL_EV_INCIDENT:
			return "INCIDENT";
		case BL_EV_HEARTBEAT:
			return "HEARTBEAT";
		case BL_EV_IGNORABLE:
			return "IGNORABLE";
		case BL_EV_ROWS_QUERY:
			return "ROWS_QUERY";
		case BL_EV_WRITE_ROWS_V2:
			return "WRITE_ROWS_V2";
		case BL_EV_UPDATE_ROWS_V2:
			return "UPDATE_ROWS_V2";
		case BL_EV_DELETE_ROWS_V2:
			return "DELETE_ROWS_V2";
		case BL_EV_GTID:
			return "GTID";
		case BL_EV_ANONYMOUS_GTID:
			return "ANONYMOUS_GTID";
		case BL_EV_PREVIOUS_GTIDS:
			return "PREVIOUS_GTIDS";
		case BL_EV_TRANSACTION_CONTEXT:
			return "TRANSACTION_CONTEXT";
		case BL_EV_VIEW_CHANGE:
			return "VIEW_CHANGE";
		case BL_EV_XA_PREPARE:
			return "XA_PREPARE";
		case BL_EV_PARTIAL_UPDATE_ROWS:
			return "PARTIAL_UPDATE_ROWS";
		case BL_EV_TRANSACTION_PAYLOAD:
			return "TRANSACTION_PAYLOAD";
		case BL_EV_HEARTBEAT_V2:
			return "HEARTBEAT_V2";
		case BL_EV_GTID_TAGGED:
			return "GTID_TAGGED";
		case BL_EV_MARIA_ANNOTATE_ROWS:
			return "MARIA_ANNOTATE_ROWS";
		case BL_EV_MARIA_BINLOG_CHECKPOINT:
			return "MARIA_BINLOG_CHECKPOINT";
		case BL_EV_MARIA_GTID:
			return "MARIA_GTID";
		case BL_EV_MARIA_GTID_LIST:
			return "MARIA_GTID_LIST";
		case BL_EV_MARIA_START_ENCRYPTION:
			return "MARIA_START_ENCRYPTION";
		case BL_EV_MARIA_QUERY_COMPRESSED:
			return "MARIA_QUERY_COMPRESSED";
		case BL_EV_MARIA_WRITE_ROWS_COMPRESSED_V1:
			return "MARIA_WRITE_ROWS_COMPRESSED_V1";
		case BL_EV_MARIA_UPDATE_ROWS_COMPRESSED_V1:
			return "MARIA_UPDATE_ROWS_COMPRESSED_V1";
		case BL_EV_MARIA_DELETE_ROWS_COMPRESSED_V1:
			return "MARIA_DELETE_ROWS_COMPRESSED_V1";
		case BL_EV_MARIA_WRITE_ROWS_COMPRESSED:
			return "MARIA_WRITE_ROWS_COMPRESSED";
		case BL_EV_MARIA_UPDATE_ROWS_COMPRESSED:
			return "MARIA_UPDATE_ROWS_COMPRESSED";
		case BL_EV_MARIA_DELETE_ROWS_COMPRESSED:
			return "MARIA_DELETE_ROWS_COMPRESSED";
		case BL_EV_MARIA_PARTIAL_ROW_DATA:
			return "MARIA_PARTIAL_ROW_DATA";
	}
	return NULL;
}

const char *
bl_op_name(bl_op op)
{
	switch (op)
	{
		case BL_OP_INSERT:
			return "insert";
		case BL_OP_UPDATE:
			return "update";
		case BL_OP_DELETE:
			return "delete";
	}
	return "?";
}

bool
bl_event_is_rows(uint8_t type)
{
	switch (type)
	{
		case BL_EV_PRE_GA_WRITE_ROWS:
		case BL_EV_PRE_GA_UPDATE_ROWS:
		case BL_EV_PRE_GA_DELETE_ROWS:
		case BL_EV_WRITE_ROWS_V1:
		case BL_EV_UPDATE_ROWS_V1:
		case BL_EV_DELETE_ROWS_V1:
		case BL_EV_WRITE_ROWS_V2:
		case BL_EV_UPDATE_ROWS_V2:
		case BL_EV_DELETE_ROWS_V2:
		case BL_EV_PARTIAL_UPDATE_ROWS:
		case BL_EV_MARIA_WRITE_ROWS_COMPRESSED_V1:
		case BL_EV_MARIA_UPDATE_ROWS_COMPRESSED_V1:
		case BL_EV_MARIA_DELETE_ROWS_COMPRESSED_V1:
		case BL_EV_MARIA_WRITE_ROWS_COMPRESSED:
		case BL_EV_MARIA_UPDATE_ROWS_COMPRESSED:
		case BL_EV_MARIA_DELETE_ROWS_COMPRESSED:
			return true;
		default:
			return false;
	}
}
