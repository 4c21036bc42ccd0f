package social

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestEveryStoreCallGoesThroughTheBreaker: breakerStore writes out every
// method of the service's store interfaces (the compiler sees to that);
// this test names a method that it does not declare itself, so a new SQL
// call cannot slip past the breaker should the type ever embed Store.
// (PurgeStore is the Purger's, on the work role, with no breaker.)
func TestEveryStoreCallGoesThroughTheBreaker(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var store []string
	covered := map[string]bool{}
	for _, f := range pkgs["social"].Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch d := n.(type) {
			case *ast.TypeSpec:
				name := d.Name.Name
				if it, ok := d.Type.(*ast.InterfaceType); ok && strings.HasSuffix(name, "Store") && name != "PurgeStore" {
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
	if len(store) < 20 {
		t.Fatalf("found %d store methods; want the store interfaces' (20 or more)", len(store))
	}
	for _, m := range store {
		if !covered[m] {
			t.Errorf("%s does not go through the SQL breaker: add it to sqlbreaker.go", m)
		}
	}
}
