-- See the MySQL migration of the same number: NULL is the default weight, 1.
ALTER TABLE posts ADD COLUMN weight REAL;
