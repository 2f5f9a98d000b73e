"""
test/apply_cases/cases_geometry.py -- GEOMETRY as people use it (issue #10):
columns of every geometry type with several SRIDs, through snapshot() and
apply(), compared with MariaDB's own WKB (ST_AsWKB) and SRID (ST_SRID).

  geometry-bytea     no PostGIS in the database: bytea columns holding EWKB
                     (the SRID inside); the bytes equal MariaDB's WKB with the
                     SRID put in as EWKB does, PostGIS (in another database)
                     reads them back with ST_GeomFromEWKB to the same WKB and
                     SRID, and the change images (the foreign table's jsonb,
                     get_json()'s text) carry the same "\\x<EWKB>" strings
  geometry-postgis   CREATE EXTENSION postgis in the target database:
                     snapshot() creates geometry(Point), geometry(LineString),
                     ... columns; ST_AsBinary/ST_SRID/ST_AsText equal
                     MariaDB's ST_AsWKB/ST_SRID/ST_AsText

Both use the main MariaDB; the PostGIS database is blf_apply_gis.
"""

import struct

from harness import (KEEP, PGDB, Source, check, col_types, log, mdb_fresh, mx, pg, q, q1, short)

GIS_DB = 'blf_apply_gis'

# (column, MariaDB type, PostGIS type snapshot() creates)
GEOM_COLS = [
    ('g', 'GEOMETRY', 'geometry'),
    ('pt', 'POINT', 'geometry(Point)'),
    ('ls', 'LINESTRING', 'geometry(LineString)'),
    ('pg', 'POLYGON', 'geometry(Polygon)'),
    ('mpt', 'MULTIPOINT', 'geometry(MultiPoint)'),
    ('mls', 'MULTILINESTRING', 'geometry(MultiLineString)'),
    ('mpg', 'MULTIPOLYGON', 'geometry(MultiPolygon)'),
    ('gc', 'GEOMETRYCOLLECTION', 'geometry(GeometryCollection)'),
]

# one row per list: WKT of each column (None: NULL) and the SRID of the row
ROWS = [
    (0, ['POINT(1 2)', 'POINT(1 2)', 'LINESTRING(0 0,1 1,2 2)', 'POLYGON((0 0,1 0,1 1,0 1,0 0))',
         'MULTIPOINT(1 1,2 2)', 'MULTILINESTRING((0 0,1 1),(2 2,3 3))',
         'MULTIPOLYGON(((0 0,1 0,1 1,0 0)),((5 5,6 5,6 6,5 5)))',
         'GEOMETRYCOLLECTION(POINT(1 1),LINESTRING(0 0,1 1))']),
    (4326, ['LINESTRING(-71.06 42.36,-0.12 51.5)', 'POINT(-180 90)', 'LINESTRING(1.5 2.5,3 4)',
            'POLYGON((0 0,10 0,10 10,0 10,0 0),(2 2,3 2,3 3,2 2))', 'MULTIPOINT(0 0)',
            'MULTILINESTRING((1 1,2 2))', 'MULTIPOLYGON(((1 1,2 1,2 2,1 1)))',
            'GEOMETRYCOLLECTION(POINT(3 4),POLYGON((0 0,1 0,1 1,0 0)))']),
    (3857, ['GEOMETRYCOLLECTION(MULTIPOINT(1 1,2 2),POINT(5 6))', 'POINT(1e-300 -0.5)', None,
            'POLYGON((1 1,2 1,2 2,1 1))', 'MULTIPOINT(-1.25 3.75,8 9)', None,
            'MULTIPOLYGON(((0 0,3 0,3 3,0 0),(1 1,2 1,2 2,1 1)))', 'GEOMETRYCOLLECTION(POINT(0 0))']),
]


def geom_table(m, db):
    mdb_fresh(m, db)
    mx(m, 'CREATE TABLE %s.geo (id INT PRIMARY KEY, %s)' %
       (db, ', '.join('%s %s' % (c, t) for c, t, _ in GEOM_COLS)))


def insert_row(m, db, rid, srid, wkts):
    vals = ', '.join('NULL' if w is None else "ST_GeomFromText('%s', %d)" % (w, srid) for w in wkts)
    mx(m, 'INSERT INTO %s.geo VALUES (%d, %s)' % (db, rid, vals))


def workload(m, db):
    """After the snapshot: inserts, updates to other geometries, a delete."""
    for k, (srid, wkts) in enumerate(ROWS):
        insert_row(m, db, 10 + k, srid, wkts)
    mx(m, "UPDATE %s.geo SET pt = ST_GeomFromText('POINT(7 8)', 4269), g = ST_GeomFromText("
          "'POLYGON((0 0,2 0,2 2,0 0))', 2154) WHERE id = 10" % db)
    mx(m, 'UPDATE %s.geo SET ls = NULL WHERE id = 11' % db)
    mx(m, 'DELETE FROM %s.geo WHERE id = 12' % db)


def mariadb_values(m, db):
    """{(id, column): (WKB hex, SRID, WKT)} of MariaDB's rows."""
    out = {}
    for c, _, _ in GEOM_COLS:
        for rid, wkb, srid, wkt in mx(m, 'SELECT id, LOWER(HEX(ST_AsWKB(%s))), ST_SRID(%s), ST_AsText(%s) '
                                        'FROM %s.geo' % (c, c, c, db)):
            out[(rid, c)] = (wkb, srid, wkt) if wkb is not None else None
    return out


def ewkb_hex(wkb_hex, srid):
    """The EWKB of a WKB (hex) with an SRID, as PostGIS writes it."""
    if srid == 0:
        return wkb_hex
    b = bytes.fromhex(wkb_hex)
    little = b[0] == 1
    fmt = '<I' if little else '>I'
    typ = struct.unpack(fmt, b[1:5])[0] | 0x20000000
    return (b[:1] + struct.pack(fmt, typ) + struct.pack(fmt, srid) + b[5:]).hex()


def case_geometry_bytea(conn, m):
    db = 'blf_ac_geo'
    geom_table(m, db)
    insert_row(m, db, 1, 4326, ROWS[1][1])
    insert_row(m, db, 2, 0, ROWS[0][1])
    src = Source(conn, 'ac_geo', r'^blf_ac_geo\.')
    try:
        check(not q1(conn, "SELECT count(*) FROM pg_extension WHERE extname = 'postgis'"),
              'postgis is installed in %s' % PGDB)
        src.snapshot(['%s.geo' % db])
        types = col_types(conn, db, 'geo')
        check(all(types[c] == 'bytea' for c, _, _ in GEOM_COLS), 'column types %s, expected bytea' % types)
        q(conn, 'CREATE FOREIGN TABLE blf_ac_geo_changes (seq bigint, op text, table_name text, '
                'after jsonb) SERVER ac_geo')
        src.start()
        workload(m, db)
        src.wait_read(m)
        # the change images before apply: "\\x<EWKB>" like the bytea
        images = q(conn, "SELECT after FROM blf_ac_geo_changes WHERE table_name = 'geo' AND op = 'insert'")
        check(len(images) == 3, 'foreign table: %d inserts' % len(images))
        src.sync(m)
        want = mariadb_values(m, db)
        got = {}
        for c, _, _ in GEOM_COLS:
            for rid, h in q(conn, "SELECT id, encode(%s, 'hex') FROM %s.geo" % (c, db)):
                got[(rid, c)] = h
        check(set(got) == set(want), 'rows: PostgreSQL %s, MariaDB %s' % (sorted(got), sorted(want)))
        bad = [(k, got[k], want[k]) for k in want
               if (want[k] is None) != (got[k] is None) or
               (want[k] and got[k] != ewkb_hex(want[k][0], want[k][1]))]
        check(not bad, 'bytea is not MariaDB WKB + SRID as EWKB: %s' % short(bad, 800))
        for img in images:
            a = img[0]
            srid, wkts = ROWS[a['id'] - 10]
            for (c, _, _), wkt in zip(GEOM_COLS, wkts):
                exp = None
                if wkt is not None:
                    wkb = mx(m, "SELECT LOWER(HEX(ST_AsWKB(ST_GeomFromText(%s, %s))))", (wkt, srid))[0][0]
                    exp = '\\x' + ewkb_hex(wkb, srid)
                check(a.get(c) == exp, 'image of row %d column %s: %r, expected %r' % (a['id'], c, a.get(c), exp))
        # PostGIS (in another database) reads the bytes back
        gis = gis_db()
        try:
            for k, h in got.items():
                if h is None:
                    continue
                r = q(gis, "SELECT encode(ST_AsBinary(g), 'hex'), ST_SRID(g) FROM "
                           "(SELECT ST_GeomFromEWKB(decode(%s, 'hex')) AS g) x", (h,))[0]
                check(r == (want[k][0], want[k][1]),
                      'ST_GeomFromEWKB of %s: %s, MariaDB %s' % (k, r, want[k][:2]))
        finally:
            gis.close()
        log('geometry bytea: %d values equal' % len(got))
    finally:
        if not KEEP:
            q(conn, 'DROP FOREIGN TABLE IF EXISTS blf_ac_geo_changes')
            src.drop()


def gis_db():
    admin = pg(db='postgres')
    try:
        if not q1(admin, 'SELECT count(*) FROM pg_database WHERE datname = %s', (GIS_DB,)):
            q(admin, 'CREATE DATABASE %s' % GIS_DB)
    finally:
        admin.close()
    c = pg(db=GIS_DB)
    q(c, 'CREATE EXTENSION IF NOT EXISTS postgis')
    return c


def drop_gis_db():
    admin = pg(db='postgres')
    try:
        q(admin, 'DROP DATABASE IF EXISTS %s WITH (FORCE)' % GIS_DB)
    finally:
        admin.close()


def case_geometry_postgis(conn_main, m):
    db = 'blf_ac_gis'
    drop_gis_db()
    conn = gis_db()
    src = None
    try:
        q(conn, 'CREATE EXTENSION binlog_fdw')
        geom_table(m, db)
        insert_row(m, db, 1, 4326, ROWS[1][1])
        insert_row(m, db, 2, 0, ROWS[0][1])
        src = Source(conn, 'ac_gis', r'^blf_ac_gis\.')
        src.snapshot(['%s.geo' % db])
        types = col_types(conn, db, 'geo')
        exp_types = {c: t for c, _, t in GEOM_COLS}
        exp_types['id'] = 'integer not null'
        check(types == exp_types, 'column types %s, expected %s' % (types, exp_types))
        src.start()
        workload(m, db)
        src.sync(m)
        want = mariadb_values(m, db)
        got = {}
        for c, _, _ in GEOM_COLS:
            for rid, wkb, srid, wkt in q(conn, "SELECT id, encode(ST_AsBinary(%s), 'hex'), ST_SRID(%s), "
                                               "ST_AsText(%s) FROM %s.geo" % (c, c, c, db)):
                got[(rid, c)] = (wkb, srid, wkt) if wkb is not None else None
        check(set(got) == set(want), 'rows: PostgreSQL %s, MariaDB %s' % (sorted(got), sorted(want)))
        bad = [(k, got[k], want[k]) for k in want
               if (want[k] is None) != (got[k] is None) or (want[k] and got[k][:2] != want[k][:2])]
        check(not bad, 'PostGIS WKB/SRID differ from MariaDB: %s' % short(bad, 800))
        # the text form too, where both write WKT alike (MULTIPOINT members differ in parentheses)
        bad = [(k, got[k][2], want[k][2]) for k in want
               if want[k] and k[1] in ('pt', 'ls', 'pg', 'mls', 'mpg') and got[k][2] != want[k][2]]
        check(not bad, 'ST_AsText differs: %s' % short(bad, 800))
        log('geometry PostGIS: %d values equal' % len(got))
    finally:
        if src and not KEEP:
            src.drop()
        conn.close()
        if not KEEP:
            drop_gis_db()
