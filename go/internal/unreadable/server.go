package unreadable

import "github.com/go-sql-driver/mysql"

// A MySQL or MariaDB server's error that names the state it, or another
// session, was in when a statement ran (a lock held too long, read-only, a
// statement or connection killed, a shutdown) is no proof about the data
// it was given either; nor is one that refuses the user a privilege. Error
// numbers from mysqld_error.h (both servers share them). A lost
// connection is not among them: a server that crashed on what it read
// loses it too.

// serverStates are the server's state errors, with what the FAIL line says.
var serverStates = map[uint16]string{
	1040: "the server has too many connections",
	1053: "the server is shutting down",
	1205: "another session held a lock past the server's lock_wait_timeout",
	1213: "a deadlock with another session",
	1290: "the server runs with an option that refuses the statement (read_only, or another)",
	1317: "the statement was killed (KILL QUERY, or a shutdown)",
	1792: "the server's transaction is read-only",
	1836: "the server runs read-only",
	1927: "the connection was killed (KILL, or a shutdown)",
	1874: "the server's InnoDB runs read-only (innodb_read_only)",
	1881: "the server's InnoDB runs with innodb_force_recovery, which refuses changes",
	1969: "the statement ran past the server's max_statement_time",
	3024: "the statement ran past the server's max_execution_time",
	4031: "the server closed the connection for inactivity",
}

// serverRefusals are the errors of a server that refuses the user: access.
var serverRefusals = map[uint16]bool{
	1044: true, // ER_DBACCESS_DENIED_ERROR
	1045: true, // ER_ACCESS_DENIED_ERROR
	1142: true, // ER_TABLEACCESS_DENIED_ERROR
	1143: true, // ER_COLUMNACCESS_DENIED_ERROR
	1227: true, // ER_SPECIFIC_ACCESS_DENIED_ERROR
}

// RefusedToUser reports whether err, or anything it wraps, is a server
// refusing its user a privilege (what granting would mend), as against
// refusing a statement for its own state or settings.
func RefusedToUser(err error) bool {
	for _, e := range chain(err) {
		if me, ok := e.(*mysql.MySQLError); ok && serverRefusals[me.Number] {
			return true
		}
	}
	return false
}
