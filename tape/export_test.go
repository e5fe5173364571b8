package tape

// Hooks for the external tests (package tape_test, which may import the test helpers that
// import tape).

// DecodeTape is the decoder alone: the tape, and whether data is canonical. With lean,
// chunk data is left out while the input is canonical. Raw bodies are slices of data.
func DecodeTape(data []byte, lean bool) (*Tape, bool, error) {
	t, canonical, _, err := decodeTape(data, decodeOptions{alias: true, lean: lean})
	return t, canonical, err
}

// DecodeTapeLean is DecodeTape that also says whether no chunk data was left out.
func DecodeTapeLean(data []byte, lean bool) (t *Tape, canonical, complete bool, err error) {
	return decodeTape(data, decodeOptions{alias: true, lean: lean})
}

// ErrUnusual marks input the decoder leaves to encoding/json.
var ErrUnusual = errUnusual
