package jsonfast

// The types the tests decode and encode.

// Scalars has a field of every scalar kind, some named by tags.
type Scalars struct {
	B   bool    `json:"b"`
	S   string  `json:"s"`
	I   int     `json:"i"`
	I8  int8    `json:"i8"`
	I16 int16   `json:"i16"`
	I32 int32   `json:"i32"`
	I64 int64   `json:"i64"`
	U   uint    `json:"u"`
	U8  uint8   `json:"u8"`
	U16 uint16  `json:"u16"`
	U32 uint32  `json:"u32"`
	U64 uint64  `json:"u64"`
	F32 float32 `json:"f32"`
	F64 float64 // no tag: named F64
}

// Point is a struct nested in Shape.
type Point struct{ X, Y float64 }

// Shape has nested structs and slices of several element kinds.
type Shape struct {
	Name   string    `json:"name"`
	Center Point     `json:"center"`
	Points []Point   `json:"points"`
	Tags   []string  `json:"tags"`
	Grid   [][]int16 `json:"grid"`
	Flags  []bool    `json:"flags"`
	Ratios []float32 `json:"ratios"`
	Sizes  []uint64  `json:"sizes"`
}

type (
	Level string
	Count uint16
	Ratio float32
	Flag  bool
	Names []Level
)

// Named has named types, skipped fields, and options the decoder ignores.
type Named struct {
	Level   Level `json:"level,omitempty"`
	Count   Count `json:"count,omitempty"`
	Ratio   Ratio
	Flag    Flag   `json:"flag,omitempty"`
	Names   Names  `json:"names,omitempty"`
	Ignored string `json:"-"`
	Dotted  string `json:"a.b-c_d"`
	Opt     []int  `json:"opt,omitempty"`
	hidden  int
	_       int
}

// Add is a typical tool input; Sum its output.
type Add struct{ A, B float64 }

type Sum struct{ Sum float64 }

// Search is a typical tool input with a string and a slice.
type Search struct {
	Query string   `json:"query"`
	Limit int      `json:"limit"`
	Tags  []string `json:"tags"`
}

// Wide has more than linearFields fields, so keys are looked up in a map.
type Wide struct {
	F0, F1, F2, F3, F4, F5, F6, F7, F8, F9 int
	S                                      string `json:"s"`
}

// Empty has no JSON fields.
type Empty struct{ hidden int }

// Batch has slices of structs that hold strings and slices, of large
// structs, and of zero-size structs.
type Batch struct {
	Items  []Search   `json:"items"`
	Shapes []Shape    `json:"shapes"`
	Marks  []struct{} `json:"marks"`
}
