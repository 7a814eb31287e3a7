-- langgraph-ctx migration 0003: full-text search over the archive (PostgreSQL).
--
-- Each archived row gets a tsvector (a generated column, so rows archived
-- before this migration are indexed by it, and every later insert in its own
-- transaction) under a GIN index. Its first lexeme names the row's scope (an
-- md5 of thread and namespace), which a search ANDs with its terms: GIN then
-- reads only that scope's postings. What is indexed is lgctx_message_text():
-- text blocks, name, tool_call_id, and each tool call's name, id and argument
-- keys and values (the words of archive.searchable_text). Punctuation inside
-- identifiers becomes a space first, so "SHP-0042", "call_0" and "12480.50"
-- are words the way the package's tokenizer reads them (PostgreSQL's parser
-- would keep "-0042" and "12480.50" whole).
--
-- Ranking is BM25, as in the other backends: PostgreSQL has no idf of its own
-- (ts_rank_cd counts matches, so a common word repeated beats a rare one), and
-- ranking every row that shares a common word is a scan. So each scope keeps
-- its document count and length and each term's document frequency
-- (lgctx_search_scopes, lgctx_search_terms), maintained by statement triggers
-- in the writing transaction; a search bounds each term's contribution with
-- them and fetches a common term's rows only when it could change the top k.
-- Applied migrations are append-only: change the schema in a new file.

CREATE FUNCTION lgctx_search_words(body text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT regexp_replace(body, '[-+._/@:?=&#~%<>\\]+', ' ', 'g')
$$;

-- The scope lexeme first (no position, so it never counts in a rank), then the words.
CREATE FUNCTION lgctx_search_vector(scope text, body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_to_tsvector(ARRAY[scope])
        || to_tsvector('simple'::regconfig, lgctx_search_words(coalesce(body, '')))
$$;

-- Every key and scalar of a JSON value, nested ones too (null is nothing).
CREATE FUNCTION lgctx_json_words(value jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT concat_ws(' ',
        (SELECT string_agg(k #>> '{}', ' ')
         FROM jsonb_path_query(value, 'strict $.** ? (@.type() == "object").keyvalue().key') AS k),
        (SELECT string_agg(v #>> '{}', ' ')
         FROM jsonb_path_query(value,
             'strict $.** ? (@.type() != "object" && @.type() != "array" && @.type() != "null")')
             AS v))
$$;

-- A message as messages_to_dict() stores it -> the words the archive indexes.
CREATE FUNCTION lgctx_message_text(m jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT concat_ws(E'\n',
        CASE jsonb_typeof(m #> '{data,content}')
            WHEN 'string' THEN m #>> '{data,content}'
            WHEN 'array' THEN (
                SELECT string_agg(
                    CASE jsonb_typeof(b) WHEN 'string' THEN b #>> '{}' ELSE b ->> 'text' END, E'\n')
                FROM jsonb_array_elements(m #> '{data,content}') AS b
                WHERE jsonb_typeof(b) = 'string' OR b ->> 'type' = 'text')
        END,
        m #>> '{data,name}',
        m #>> '{data,tool_call_id}',
        (SELECT string_agg(
                concat_ws(' ', c ->> 'name', c ->> 'id', lgctx_json_words(c -> 'args')), E'\n')
         FROM jsonb_array_elements(
             CASE jsonb_typeof(m #> '{data,tool_calls}')
                 WHEN 'array' THEN m #> '{data,tool_calls}' ELSE '[]'::jsonb END) AS c))
$$;

CREATE TABLE lgctx_search_scopes (
    scope  TEXT   PRIMARY KEY,
    docs   BIGINT NOT NULL,  -- rows indexed under the scope
    length BIGINT NOT NULL   -- their lengths summed (distinct words per row)
);

CREATE TABLE lgctx_search_terms (
    scope TEXT   NOT NULL,
    term  TEXT   NOT NULL,
    df    BIGINT NOT NULL,  -- rows of the scope holding the term
    PRIMARY KEY (scope, term)
);

-- Adds (sign 1) or removes (sign -1) rows' counts. Rows are taken in key order
-- so that two writers of one scope lock its counters in the same order.
CREATE FUNCTION lgctx_search_count(scopes text[], vectors tsvector[], sign integer)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO lgctx_search_scopes AS s (scope, docs, length)
    SELECT d.scope, sign * count(*), sign * sum(length(d.search) - 1)
    FROM unnest(scopes, vectors) AS d(scope, search)
    GROUP BY d.scope ORDER BY d.scope
    ON CONFLICT (scope) DO UPDATE
        SET docs = s.docs + excluded.docs, length = s.length + excluded.length;
    INSERT INTO lgctx_search_terms AS t (scope, term, df)
    SELECT d.scope, u.lexeme, sign * count(*)
    FROM unnest(scopes, vectors) AS d(scope, search), unnest(d.search) AS u
    WHERE u.lexeme <> d.scope
    GROUP BY d.scope, u.lexeme ORDER BY d.scope, u.lexeme
    ON CONFLICT (scope, term) DO UPDATE SET df = t.df + excluded.df;
$$;

-- One trigger function for every indexed table: each has search_scope and search.
CREATE FUNCTION lgctx_search_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        PERFORM lgctx_search_count(array_agg(search_scope), array_agg(search), -1) FROM old_rows;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM lgctx_search_count(array_agg(search_scope), array_agg(search), 1) FROM new_rows;
    END IF;
    RETURN NULL;
END
$$;

ALTER TABLE lgctx_archive
    ADD COLUMN search_scope TEXT
        GENERATED ALWAYS AS ('a' || md5(thread_id) || md5(namespace)) STORED,
    ADD COLUMN search tsvector
        GENERATED ALWAYS AS (lgctx_search_vector(
            'a' || md5(thread_id) || md5(namespace), lgctx_message_text(content))) STORED;

-- fastupdate off: GIN's pending list would make each search read, unsorted, every
-- entry written since the last vacuum (tens of milliseconds after a burst of writes);
-- archive writes come in batches, searches on every call.
CREATE INDEX lgctx_archive_search ON lgctx_archive USING gin (search) WITH (fastupdate = off);

-- The rows archived before this migration, counted once (set-wise, no arrays).
INSERT INTO lgctx_search_scopes (scope, docs, length)
SELECT search_scope, count(*), sum(length(search) - 1) FROM lgctx_archive GROUP BY search_scope;

INSERT INTO lgctx_search_terms (scope, term, df)
SELECT a.search_scope, u.lexeme, count(*)
FROM lgctx_archive AS a, unnest(a.search) AS u
WHERE u.lexeme <> a.search_scope
GROUP BY a.search_scope, u.lexeme;

-- A trigger with transition tables takes one event each.
CREATE TRIGGER lgctx_archive_counted_insert AFTER INSERT ON lgctx_archive
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION lgctx_search_counted();

CREATE TRIGGER lgctx_archive_counted_update AFTER UPDATE ON lgctx_archive
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION lgctx_search_counted();

CREATE TRIGGER lgctx_archive_counted_delete AFTER DELETE ON lgctx_archive
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION lgctx_search_counted();
