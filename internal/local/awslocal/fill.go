package awslocal

import (
	"fmt"
	"reflect"
)

// Fill sets every AWS client field of dst, a pointer to a function's
// Clients struct (nested and embedded structs included), to this bundle's
// client of that service: the local stack and the tests hand a function
// their emulator clients through its own wiring (wire.ClientSource.Fill),
// as the deployed binary's NewClients builds them. A field of a client
// type the bundle does not have is an error; one the bundle holds nil is
// left nil.
func (c Clients) Fill(dst any) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("awslocal: Fill needs a pointer to a struct, not %T", dst)
	}
	have := map[reflect.Type]reflect.Value{}
	cv := reflect.ValueOf(c)
	for i := range cv.NumField() {
		have[cv.Field(i).Type()] = cv.Field(i)
	}
	return fill(v.Elem(), have)
}

func fill(v reflect.Value, have map[reflect.Type]reflect.Value) error {
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		switch {
		case !sf.IsExported():
			continue
		case f.Kind() == reflect.Struct:
			if err := fill(f, have); err != nil {
				return err
			}
		case f.Kind() == reflect.Pointer:
			client, ok := have[f.Type()]
			if !ok {
				return fmt.Errorf("awslocal: no %s client for %s.%s", f.Type(), v.Type(), sf.Name)
			}
			f.Set(client)
		}
	}
	return nil
}
