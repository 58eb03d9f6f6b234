// Package jsonmsg says what is wrong with a JSON body in JSON's words, for
// a message a sender reads: encoding/json's own errors name Go types and
// struct fields ("cannot unmarshal string into Go struct field
// Issue.issue.number of type int"), which are ingestd's internals and
// mean nothing to whoever wrote the body. It never returns Go's text.
package jsonmsg

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// Describe says why decoding a body failed: "not valid JSON at byte 12",
// "field \"issue.number\" must be a whole number, not a string".
func Describe(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return "it is empty"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "it is not valid JSON: it ends early"
	case errors.As(err, &syntax):
		return "it is not valid JSON at byte " + strconv.FormatInt(syntax.Offset, 10)
	case errors.As(err, &typ) && typ.Field == "":
		return "it must be " + Kind(typ.Type) + ", not " + article(typ.Value)
	case errors.As(err, &typ):
		return "field \"" + typ.Field + "\" must be " + Kind(typ.Type) + ", not " + article(typ.Value)
	default:
		return "it is not JSON of the expected shape"
	}
}

// Kind names, in JSON's words, what a value of Go type t takes.
func Kind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// article names the JSON value an UnmarshalTypeError's Value describes.
func article(value string) string {
	switch kind, _, _ := strings.Cut(value, " "); kind {
	case "array", "object":
		return "an " + kind
	case "number", "string":
		return "a " + kind
	case "bool":
		return "true or false"
	default:
		return "another value"
	}
}
