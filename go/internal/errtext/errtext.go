// Package errtext keeps error messages readable where Vitess's errors meet
// fmt. A vterrors error formatted with %v, as fmt.Errorf's %w does when it
// wraps one, prints its cause first and its own message on the next line
// ("cause\nmsg"), or an RPC code line ("Code: NOT_FOUND\nmsg\n"): the
// message an operator reads comes out backwards and on several lines.
//
// The errors this package makes carry a Vitess code as vterrors' do (for
// vterrors.Code and the RPC status) and print their message whatever the
// verb, and mend what they wrap. Text mends the message of a chain that
// holds Vitess's own errors (from Vitess's packages) under fmt's.
package errtext

import (
	"context"
	"fmt"
	"strings"

	"vitess.io/vitess/go/vt/vterrors"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"
)

// coded is an error with a Vitess code: a message and, when it wraps, a
// cause, printed "msg: cause" like vterrors' wrapping (the cause's Text,
// made once: errors do not change), for every verb.
type coded struct {
	code  vtrpcpb.Code // Code_OK: the cause's
	text  string
	cause error
}

var _ vterrors.ErrorWithCode = (*coded)(nil)

func newCoded(code vtrpcpb.Code, msg string, cause error) *coded {
	if cause != nil {
		msg += ": " + Text(cause)
	}
	return &coded{code: code, text: msg, cause: cause}
}

func (e *coded) Error() string { return e.text }

// mended: its Error is already Text.
func (e *coded) mended() {}

func (e *coded) Unwrap() error { return e.cause }

// Cause lets vterrors.Cause, RootCause and UnwrapAll walk past it.
func (e *coded) Cause() error { return e.cause }

func (e *coded) ErrorCode() vtrpcpb.Code {
	if e.code != vtrpcpb.Code_OK || e.cause == nil {
		return e.code
	}
	return codeOf(e.cause)
}

// codeOf is vterrors.Code, which stops at an error that has no Cause (as
// fmt.Errorf's have): the code of the first error down the chain, through
// Unwrap and Cause, that has one. Each error is looked at once.
func codeOf(err error) vtrpcpb.Code {
	if e, ok := err.(vterrors.ErrorWithCode); ok {
		if c, ours := err.(*coded); !ours || c.code != vtrpcpb.Code_OK {
			return e.ErrorCode()
		}
	}
	switch err {
	case context.Canceled:
		return vtrpcpb.Code_CANCELED
	case context.DeadlineExceeded:
		return vtrpcpb.Code_DEADLINE_EXCEEDED
	}
	for _, c := range causes(err) {
		if code := codeOf(c); code != vtrpcpb.Code_UNKNOWN {
			return code
		}
	}
	return vtrpcpb.Code_UNKNOWN
}

// Errorf is vterrors.Errorf: a new error with code.
func Errorf(code vtrpcpb.Code, format string, args ...any) error {
	return newCoded(code, fmt.Sprintf(format, args...), nil)
}

// New is vterrors.New.
func New(code vtrpcpb.Code, msg string) error { return newCoded(code, msg, nil) }

// Wrap is vterrors.Wrap: "msg: err" with err's code; nil for a nil err.
func Wrap(err error, msg string) error { return Wrapf(err, "%s", msg) }

// Wrapf is vterrors.Wrapf: Wrap with a formatted message.
func Wrapf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return newCoded(vtrpcpb.Code_OK, fmt.Sprintf(format, args...), err)
}

// Text is err's message as an operator should read it: every error of its
// chain as its Error(), where a wrapper had formatted one with %v.
func Text(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if _, ok := err.(interface{ mended() }); ok {
		return s
	}
	for _, c := range causes(err) {
		mended := Text(c)
		plain := c.Error()
		if v := fmt.Sprintf("%v", c); v != plain && strings.Contains(s, v) {
			s = strings.Replace(s, v, mended, 1)
		} else if mended != plain {
			s = strings.Replace(s, plain, mended, 1)
		}
	}
	return s
}

// Line is Text without the line breaks a Vitess error ends with ("Code:
// NOT_FOUND\nmsg\n"): for a message that goes on after it.
func Line(err error) string { return strings.TrimRight(Text(err), "\n") }

// causes is what err wraps directly: through Unwrap, or a Vitess error's
// Cause.
func causes(err error) []error {
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		return e.Unwrap()
	case interface{ Unwrap() error }:
		if c := e.Unwrap(); c != nil {
			return []error{c}
		}
	}
	if c := vterrors.Cause(err); c != nil {
		return []error{c}
	}
	return nil
}
