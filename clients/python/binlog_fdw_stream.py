#!/usr/bin/python3
"""clients/python/binlog_fdw_stream.py -- a pipelined get_jsonl()/ack()
consumer of a binlog_fdw source, with psycopg 3 (Debian's python3-psycopg).

The recipe (docs/clients.md):

    from binlog_fdw_stream import Consumer

    with Consumer('host=/run/postgresql dbname=app', 'src') as c:
        for batch in c.batches():
            handle(batch.lines)         # bytes: one JSON line per change
            c.ack(batch)                # in order; sent, not waited for
        # c.confirm(): every ack sent is durable; c.sync(): that, and every
        # batch not acknowledged given back

How it is fast: the connection is in libpq's pipeline mode, and `depth`
get_jsonl() calls are always in flight, so PostgreSQL takes the next batch
while the client works on the last one; an ack is sent without waiting for
its answer (its answer is read in order with the gets'); every call is
followed by its own Sync, so each ack commits on its own, as ack() does
outside a pipeline.  A batch is one text value of JSON lines: no row per
change and no round trip per change.

The semantics are binlog_fdw's get/ack/rollback, unchanged (README,
"Consuming changes"): several batches may be out un-acknowledged; acks come
in the order get returned the batches (an ack out of order is the server's
error, raised here as ConsumerError); ack of a batch makes its changes and
everything before them durable; rollback() gives every un-acked batch back,
and the next batch starts at the first change not acknowledged.  On
connect the consumer calls rollback(server) itself: what an earlier session
left un-acked comes again, in order, before anything newer (one consumer
per source, as with Canal).
"""
import collections

import psycopg
from psycopg import pq

GET_SQL = (b'SELECT batch_id, first_seq, last_seq, changes, lines '
           b'FROM binlog_fdw.get_jsonl($1, $2, $3)')
ACK_SQL = b'SELECT binlog_fdw.ack($1, $2)'
ROLLBACK_SQL = b'SELECT binlog_fdw.rollback($1)'

Batch = collections.namedtuple('Batch', 'batch_id first_seq last_seq changes lines')


class ConsumerError(Exception):
    """An error of a call in the pipeline (sqlstate: its SQLSTATE)."""

    def __init__(self, message, sqlstate=None):
        super().__init__(message)
        self.sqlstate = sqlstate


class Consumer:
    """A pipelined consumer of one binlog_fdw source.

    max_changes: changes per batch (get_jsonl's max_changes); with depth
      batches out at once keep depth * max_changes well inside the ring
      (binlog_fdw.ring_size; half of it at most): un-acked batches hold
      ring space, and a get that waits for a full ring waits for the ack
      queued behind it (until timeout_ms).  timeout_ms: how long a get waits
      for changes (also how long an ack sent while the source is idle may
      wait behind a get).  depth: gets in flight.
    """

    def __init__(self, conninfo, server, max_changes=5000, timeout_ms=1000, depth=2):
        self.conninfo = conninfo
        self.server = server.encode()
        self.max_changes = str(max_changes).encode()
        self.timeout_ms = str(timeout_ms).encode()
        self.depth = depth
        self.pg = None
        self.queue = collections.deque()     # what each sent call is, in order
        self.unacked = collections.deque()   # batch ids handed out, not acked
        self.ready = collections.deque()     # batches read by confirm(), not handed out
        self.gets_in_flight = 0

    # ---- connection ----
    def connect(self):
        self.pg = pq.PGconn.connect(self.conninfo.encode() if isinstance(self.conninfo, str)
                                    else self.conninfo)
        if self.pg.status != pq.ConnStatus.OK:
            msg = self.pg.error_message.decode(errors='replace').strip()
            self.pg.finish()
            self.pg = None
            raise psycopg.OperationalError(msg)
        self.pg.enter_pipeline_mode()
        self.queue.clear()
        self.unacked.clear()
        self.ready.clear()
        self.gets_in_flight = 0
        # whatever an earlier session of this consumer left un-acked comes
        # again, in order, before anything newer
        self._send('rollback', ROLLBACK_SQL, [self.server])
        self._read()
        return self

    @property
    def backend_pid(self):
        return self.pg.backend_pid

    def close(self):
        """Disconnect now; batches not acknowledged come again to the next
        session once this one's backend has ended.  An ack whose answer was
        not read may not have happened (its batch comes again, as after a
        crash): call confirm() or sync() first for the acks sent to count."""
        if self.pg is not None:
            self.pg.finish()
            self.pg = None

    def __enter__(self):
        return self.connect()

    def __exit__(self, *exc):
        self.close()

    # ---- the pipeline ----
    def _send(self, kind, sql, params):
        self.pg.send_query_params(sql, params)
        self.pg.pipeline_sync()        # flushes: the server starts on it now
        self.queue.append(kind)

    def _send_get(self):
        self._send('get', GET_SQL, [self.server, self.max_changes, self.timeout_ms])
        self.gets_in_flight += 1

    def _read(self):
        """The next call's outcome: (kind, result)."""
        kind = self.queue.popleft()
        res = None
        while True:
            r = self.pg.get_result()
            if r is None:
                if self.pg.status != pq.ConnStatus.OK:
                    raise psycopg.OperationalError(self.pg.error_message.decode(errors='replace').strip())
                continue
            if r.status == pq.ExecStatus.PIPELINE_SYNC:
                break
            if res is None:
                res = r
        if kind in ('get', 'stale-get'):
            self.gets_in_flight -= 1
        if res is not None and res.status == pq.ExecStatus.FATAL_ERROR:
            state = res.error_field(pq.DiagnosticField.SQLSTATE)
            raise ConsumerError('%s: %s' % (kind, res.error_message.decode(errors='replace').strip()),
                                state.decode() if state else None)
        return kind, res

    def batches(self, stop=None):
        """Yield batches as they come; stop(): end when it returns true
        (checked before each wait).  Batches not acknowledged when the
        generator ends stay out until ack(), rollback() or close()."""
        while stop is None or not stop():
            while self.gets_in_flight < self.depth:
                self._send_get()
            if self.ready:
                b = self.ready.popleft()
            else:
                kind, res = self._read()
                if kind != 'get' or res.ntuples == 0:
                    continue        # an ack's or rollback's answer, a get rolled back, no changes
                b = self._batch(res)
                # the next get goes out before the client works on this batch
                self._send_get()
            self.unacked.append(b.batch_id)
            yield b

    @staticmethod
    def _batch(res):
        v = res.get_value
        return Batch(int(v(0, 0)), int(v(0, 1)), int(v(0, 2)), int(v(0, 3)), v(0, 4))

    def confirm(self):
        """Wait until every ack sent has been answered: they are durable
        when it returns (a refused one raises ConsumerError).  Batches that
        arrive meanwhile are kept: batches() hands them out next."""
        while 'ack' in self.queue:
            kind, res = self._read()
            if kind == 'get' and res.ntuples:
                self.ready.append(self._batch(res))

    def ack(self, batch):
        """Acknowledge batch (the oldest un-acked one): sent now, its answer
        read in order with the gets' (a refused ack raises ConsumerError
        from the generator, or from sync()).  Call sync() for the ack to be
        known durable."""
        bid = batch.batch_id if isinstance(batch, Batch) else int(batch)
        if self.unacked and self.unacked[0] == bid:
            self.unacked.popleft()
        self._send('ack', ACK_SQL, [self.server, str(bid).encode()])

    def rollback(self):
        """Give every un-acked batch back: the next batch starts at the
        first change not acknowledged.  Batches of gets still in flight are
        given back too (their answers are dropped)."""
        self._stale()
        self._send('rollback', ROLLBACK_SQL, [self.server])
        self._drain()

    def sync(self):
        """Read every answer still due: the acks sent are durable when it
        returns (a refused one raises ConsumerError).  The batches of gets
        in flight, and every batch not acknowledged, are given back; the
        next batches() starts at the first change not acknowledged."""
        self._stale()
        # always: a batch whose ack is refused is still out on the server
        self._send('rollback', ROLLBACK_SQL, [self.server])
        self._drain()

    def _stale(self):
        self.queue = collections.deque('stale-get' if k == 'get' else k for k in self.queue)

    def _drain(self):
        # every answer is read even after an error (the first one is raised)
        self.unacked.clear()
        self.ready.clear()
        err = None
        while self.queue:
            try:
                self._read()
            except ConsumerError as e:
                err = err or e
        if err is not None:
            raise err


def main():
    """python3 binlog_fdw_stream.py CONNINFO SERVER: JSON lines to stdout."""
    import sys
    out = sys.stdout.buffer
    with Consumer(sys.argv[1], sys.argv[2]) as c:
        for b in c.batches():
            out.write(b.lines)
            out.flush()
            c.ack(b)


if __name__ == '__main__':
    main()
