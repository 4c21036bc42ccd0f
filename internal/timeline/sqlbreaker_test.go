package timeline

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// TestEveryStoreCallGoesThroughTheBreaker: breakerStore writes out every Store method
// (the compiler sees to that); this test names a Store method that it
// does not declare itself, so a new SQL call cannot slip past the breaker
// should the type ever embed Store again.
func TestEveryStoreCallGoesThroughTheBreaker(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var store []string
	covered := map[string]bool{}
	for _, f := range pkgs["timeline"].Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch d := n.(type) {
			case *ast.TypeSpec:
				if it, ok := d.Type.(*ast.InterfaceType); ok && d.Name.Name == "Store" {
					for _, m := range it.Methods.List {
						for _, name := range m.Names {
							store = append(store, name.Name)
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 {
					if id, ok := d.Recv.List[0].Type.(*ast.Ident); ok && id.Name == "breakerStore" {
						covered[d.Name.Name] = true
					}
				}
			}
			return true
		})
	}
	if len(store) == 0 {
		t.Fatal("found no Store interface")
	}
	for _, m := range store {
		// Ping is the readiness probe: it must reach SQL even while the
		// breaker is open, to tell whether SQL is back.
		if m != "Ping" && !covered[m] {
			t.Errorf("Store.%s does not go through the SQL breaker: add it to sqlbreaker.go", m)
		}
	}
}
