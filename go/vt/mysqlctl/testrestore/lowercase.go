package testrestore

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
)

// MySQL 8 fixes lower_case_table_names when its data dictionary is
// initialized and refuses to start on it with another value (MY-011087,
// "Different lower_case_table_names settings for server ('0') and data
// dictionary ('1')", then "Data Dictionary initialization failed"). A backup
// of a server initialized with 1 then fails to start in a throwaway server
// started with the default: the backup says which value it needs, and is
// not damaged. (MariaDB has no such check.) The message is matched as MySQL
// 8.0 and 8.4 write it to the error log (error MY-011087); the server's
// source file that raises it was not located here, and the restart is
// proven only against a stand-in that refuses as MySQL does (docs).
var caseMismatch = regexp.MustCompile(`Different lower_case_table_names settings for server \('(\d+)'\) and data dictionary \('(\d+)'\)`)

const caseFlag = "--lower-case-table-names"

// startMatched is start; when MySQL refused the data directory for its
// lower_case_table_names, it starts it again with the value the data
// dictionary holds, once, and returns the arguments that started it. A
// value the operator gave (--mysqld-flags) is not overridden: a flag the
// backup contradicts.
func (s *server) startMatched(ctx context.Context, args []string, timeout time.Duration) (*sql.DB, []string, error) {
	db, err := s.start(ctx, args, timeout)
	if err == nil || ctx.Err() != nil {
		return db, args, err
	}
	m := caseMismatch.FindStringSubmatch(s.logTail())
	if m == nil {
		return nil, args, err
	}
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(strings.ReplaceAll(a, "_", "-"), caseFlag) }) {
		return nil, args, flagvalue.Contradiction(fmt.Errorf("the backup's data dictionary was initialized with lower_case_table_names=%s, and the "+
			"server was started with %s: give --mysqld-flags=%s=%s, or leave it out", m[2], m[1], caseFlag, m[2]))
	}
	args = append(slices.Clip(args), caseFlag+"="+m[2])
	s.logger.Infof("test restore: the backup's data dictionary was initialized with lower_case_table_names=%s: starting %s again with %s=%s", m[2],
		s.bin, caseFlag, m[2])
	db, err = s.start(ctx, args, timeout)
	return db, args, err
}
