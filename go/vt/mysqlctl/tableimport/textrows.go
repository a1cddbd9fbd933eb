package tableimport

import (
	"context"
	"database/sql"
)

// TextRows is a query function on db that reads every column as text
// (NULL as ""), the shape the engine's checks take their queries in.
func TextRows(db *sql.DB) func(ctx context.Context, q string) ([][]string, error) {
	return func(ctx context.Context, q string) ([][]string, error) {
		_, rows, err := queryText(ctx, db, q)
		return rows, err
	}
}

// queryText runs q on db and returns its column names and every row, each
// column as text (NULL as "").
func queryText(ctx context.Context, db *sql.DB, q string) ([]string, [][]string, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, err
	}
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = v.String
		}
		out = append(out, row)
	}
	return cols, out, rows.Err()
}
