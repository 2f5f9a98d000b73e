-- A fixed workload for the pg_regress tests: its binlog is decoded by
-- sql/read_binlog.sql (test/suites/20-regress.sh runs it on a fresh
-- MariaDB instance and exports the binlog directory as BLF_REGRESS_BINLOGS).
SET time_zone = '+00:00';
CREATE DATABASE shop CHARACTER SET utf8mb4;
CREATE TABLE shop.orders (
    id bigint unsigned PRIMARY KEY,
    customer varchar(64) NOT NULL,
    amount decimal(12,2),
    qty tinyint,
    created datetime(6),
    paid timestamp(3) NULL,
    status enum('new','paid','shipped'),
    tags set('gift','rush','fragile'),
    flags bit(5),
    note text CHARACTER SET latin1,
    doc json,
    raw varbinary(16),
    born year,
    ship_by date,
    window time(2),
    weight double,
    ratio float
);
BEGIN;
INSERT INTO shop.orders VALUES
 (1, 'Zoë 🚀', 12.50, -128, '2024-01-02 03:04:05.123456', '2024-01-02 03:04:05.999', 'new', 'gift,rush', b'10101',
  'café', '{"items": [1, 2], "vip": true}', x'00ff10', 1999, '2024-02-29', '-12:34:56.78', 1.5, 0.25),
 (18446744073709551615, 'max', -9999999999.99, 127, NULL, NULL, 'shipped', '', b'00000',
  NULL, NULL, x'', 2155, '1000-01-01', '838:59:59.00', -0.0001, 3.5);
COMMIT;
BEGIN;
UPDATE shop.orders SET status = 'paid', amount = amount + 1, tags = 'fragile' WHERE id = 1;
DELETE FROM shop.orders WHERE id = 18446744073709551615;
COMMIT;
BEGIN;
INSERT INTO shop.orders (id, customer) VALUES (2, 'rolled back');
ROLLBACK;
FLUSH BINARY LOGS;
INSERT INTO shop.orders (id, customer, note) VALUES (3, 'after rotate', 'second file');
