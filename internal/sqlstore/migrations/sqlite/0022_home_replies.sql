-- See the MySQL migration of the same number: NULL is the default rule.
ALTER TABLE users ADD COLUMN home_replies INTEGER;
