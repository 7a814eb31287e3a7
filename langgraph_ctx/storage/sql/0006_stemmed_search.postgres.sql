-- langgraph-ctx migration 0006: every search index holds English stems (PostgreSQL).
--
-- Until 0005 a word was matched as written ('simple'), so "Who does my taxes?"
-- missed "my tax advisor". Now lgctx_search_vector stems with Snowball's English
-- (Porter2): the algorithm the package's own stemmer runs (retrieval.text.stems), so
-- this index, SQLite's and the in-process one hold the same terms for the same text.
-- A search's words arrive stemmed by the package, and are read with 'simple' (a
-- second stemming could change a stem: Porter2 is not idempotent).
--
-- Not the built-in 'english' configuration: its stop list drops words the package
-- keeps and searches for ("further", "own", "same", "very", "up", "out", ...), and
-- would shorten every row's length, which BM25 reads. lgctx_english is 'simple' with
-- its word types mapped to a Snowball English dictionary that has no stop list; the
-- package drops its own stop words from a question, as in the other backends.
--
-- The stored search columns are computed anew: dropped (their GIN indexes with
-- them) and added back, which rewrites each table once without firing the counting
-- triggers; then the counts BM25 reads are rebuilt from the new vectors, as 0003 first
-- built them. Rows keep their keys and text.
-- Applied migrations are append-only: change the schema in a new file.

CREATE TEXT SEARCH DICTIONARY lgctx_english_stem (TEMPLATE = snowball, Language = english);

CREATE TEXT SEARCH CONFIGURATION lgctx_english (COPY = simple);

-- Every word type, digits in it or not, as the package stems every term; numbers,
-- hosts and the like stay as 'simple' reads them.
ALTER TEXT SEARCH CONFIGURATION lgctx_english
    ALTER MAPPING FOR asciiword, word, numword, asciihword, hword, numhword,
                      hword_asciipart, hword_part, hword_numpart
    WITH lgctx_english_stem;

CREATE OR REPLACE FUNCTION lgctx_search_vector(scope text, body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_to_tsvector(ARRAY[scope])
        || to_tsvector('lgctx_english'::regconfig, lgctx_search_words(coalesce(body, '')))
$$;

ALTER TABLE lgctx_archive_passages DROP COLUMN search;
ALTER TABLE lgctx_archive_passages ADD COLUMN search tsvector GENERATED ALWAYS AS (
    lgctx_search_vector('p' || md5(thread_id) || md5(namespace), body)) STORED;
CREATE INDEX lgctx_archive_passages_search ON lgctx_archive_passages USING gin (search)
    WITH (fastupdate = off);

ALTER TABLE lgctx_memory_index DROP COLUMN search;
ALTER TABLE lgctx_memory_index ADD COLUMN search tsvector GENERATED ALWAYS AS (
    lgctx_search_vector('m' || md5(namespace), body)) STORED;
CREATE INDEX lgctx_memory_index_search ON lgctx_memory_index USING gin (search)
    WITH (fastupdate = off);

-- Only these two tables are counted since 0005 (scopes 'p...' and 'm...').
DELETE FROM lgctx_search_terms;
DELETE FROM lgctx_search_scopes;

INSERT INTO lgctx_search_scopes (scope, docs, length)
SELECT search_scope, count(*), sum(length(search) - 1) FROM lgctx_archive_passages
GROUP BY search_scope
UNION ALL
SELECT search_scope, count(*), sum(length(search) - 1) FROM lgctx_memory_index
GROUP BY search_scope;

INSERT INTO lgctx_search_terms (scope, term, df)
SELECT d.search_scope, u.lexeme, count(*)
FROM (SELECT search_scope, search FROM lgctx_archive_passages
      UNION ALL
      SELECT search_scope, search FROM lgctx_memory_index) AS d, unnest(d.search) AS u
WHERE u.lexeme <> d.search_scope
GROUP BY d.search_scope, u.lexeme;
