package mcpserver

import (
	"reflect"
	"strings"
)

// jsonKind names, in JSON's words, what an argument of Go type t takes:
// a tool's caller writes JSON, and a Go type name means nothing to it.
func jsonKind(t reflect.Type) string {
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
		if t.Elem().Kind() == reflect.String {
			return "an array of strings"
		}
		return "an array"
	default:
		return "an object"
	}
}

// jsonValue names the JSON value an UnmarshalTypeError's Value
// describes ("array", "number 2.5", "string") with its article.
func jsonValue(value string) string {
	switch kind, rest, _ := strings.Cut(value, " "); kind {
	case "array", "object":
		return "an " + kind
	case "number":
		if rest != "" {
			return rest
		}
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	default:
		return "another value"
	}
}
