package js

import (
	"reflect"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"
)

// A node script normally gets a new global object for each call, so that
// what one call leaves on it (an assignment to an undeclared name, a
// property set on this or globalThis) is gone before the next. Most
// scripts never reach their global object: they read the globals and
// write the board. needsOwnGlobal finds those that might, from the parsed
// script; the others run with the realm's shared global object, which is
// frozen and empty, so that even a way in the analysis did not foresee
// could neither leave nor find anything on it.

// globalName reports whether name names the global object, its
// prototype chain (a bare __proto__ reads the global object's prototype)
// or code whose scope it is: a script that mentions one gets its own.
func globalName(name string) bool {
	switch name {
	case "globalThis", "eval", "Function", "__proto__":
		return true
	}
	return false
}

// needsOwnGlobal reports whether the script in prg might read or write its
// global object itself: it uses this or super, names globalThis, eval or
// Function (also as a shorthand property, {globalThis}), reaches a
// constructor property (the way to the Function constructor without
// naming it), deletes a plain name, declares a function as the lone body
// of an if or a label (which sloppy code turns into an assignment), or
// assigns to a name that no scope around the assignment declares (which
// sloppy code turns into a property of the global object). It errs
// towards true: anything it does not recognise as safe needs an own
// global object.
func needsOwnGlobal(prg *ast.Program) bool {
	s := &globalScan{}
	s.walk(reflect.ValueOf(prg))
	return s.own
}

// globalScan walks a program keeping the names each enclosing scope
// declares.
type globalScan struct {
	scopes []map[string]bool
	own    bool
}

func (s *globalScan) walk(v reflect.Value) {
	if s.own {
		return
	}
	switch v.Kind() {
	case reflect.Interface:
		if !v.IsNil() {
			s.walk(v.Elem())
		}
	case reflect.Pointer:
		if v.IsNil() || v.Type() == fileType {
			return
		}
		if s.descend(v.Interface()) {
			return
		}
		pushed := s.visit(v.Interface())
		s.walk(v.Elem())
		if pushed {
			s.pop()
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			s.walk(v.Field(i))
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			s.walk(v.Index(i))
		}
	}
}

func (s *globalScan) push(names map[string]bool) { s.scopes = append(s.scopes, names) }
func (s *globalScan) pop()                       { s.scopes = s.scopes[:len(s.scopes)-1] }

// descend walks the nodes whose parts are evaluated in different scopes
// and reports whether n was one. A function's parameters (and their
// default values) see its name and parameters; its body also sees its var
// declarations. A switch's discriminant is outside the scope of its case
// clauses.
func (s *globalScan) descend(n any) bool {
	switch t := n.(type) {
	case *ast.FunctionLiteral:
		names := map[string]bool{}
		if t.Name != nil {
			names[t.Name.Name.String()] = true
		}
		s.function(names, t.ParameterList, t.DeclarationList, t.Body)
	case *ast.ArrowFunctionLiteral:
		s.function(map[string]bool{}, t.ParameterList, t.DeclarationList, t.Body)
	case *ast.SwitchStatement:
		s.walk(reflect.ValueOf(t.Discriminant))
		names := map[string]bool{}
		for _, c := range t.Body {
			declareLexical(names, c.Consequent)
		}
		s.push(names)
		s.walk(reflect.ValueOf(t.Body))
		s.pop()
	default:
		return false
	}
	return true
}

// function walks a function's parameters in a scope of names and its
// parameters, then its body in a scope of its var declarations too.
func (s *globalScan) function(names map[string]bool, params *ast.ParameterList, vars []*ast.VariableDeclaration, body ast.Node) {
	declareParams(names, params)
	s.push(names)
	s.walk(reflect.ValueOf(params))
	bodyNames := map[string]bool{}
	declareVars(bodyNames, vars)
	s.push(bodyNames)
	s.walk(reflect.ValueOf(body))
	s.pop()
	s.pop()
}

// visit checks node n and reports whether it opened a scope, which walk
// closes after n's children.
func (s *globalScan) visit(n any) bool {
	switch t := n.(type) {
	case *ast.ThisExpression, *ast.SuperExpression, *ast.WithStatement:
		s.own = true
	case *ast.Identifier:
		s.own = s.own || globalName(t.Name.String())
	case *ast.PropertyShort: // {globalThis} reads the name; its Name is not a pointer the walk visits
		name := t.Name.Name.String()
		s.own = s.own || globalName(name) || name == "constructor" // const {constructor} = f
	case *ast.DotExpression: // x.constructor, and x.globalThis on whatever x is
		name := t.Identifier.Name.String()
		s.own = s.own || name == "constructor" || globalName(name) && name != "__proto__"
	case *ast.StringLiteral:
		s.own = s.own || t.Value == "constructor"
	case *ast.TemplateElement: // `constructor`
		s.own = s.own || t.Parsed == "constructor"
	case *ast.IfStatement:
		s.own = s.own || isFunctionDeclaration(t.Consequent) || isFunctionDeclaration(t.Alternate)
	case *ast.LabelledStatement:
		s.own = s.own || isFunctionDeclaration(t.Statement)
	case *ast.UnaryExpression:
		switch t.Operator {
		case token.DELETE:
			_, plain := t.Operand.(*ast.Identifier)
			s.own = s.own || plain
		case token.INCREMENT, token.DECREMENT:
			s.write(t.Operand)
		}
	case *ast.AssignExpression:
		s.write(t.Left)
	case *ast.ForInStatement:
		return s.forInto(t.Into)
	case *ast.ForOfStatement:
		return s.forInto(t.Into)
	default:
		if names := scopeNames(n); names != nil {
			s.push(names)
			return true
		}
	}
	return false
}

func isFunctionDeclaration(st ast.Statement) bool {
	_, ok := st.(*ast.FunctionDeclaration)
	return ok
}

// forInto checks the head of a for-in or for-of loop: an expression is
// assigned to, a let or const declaration opens a scope.
func (s *globalScan) forInto(into ast.ForInto) bool {
	switch t := into.(type) {
	case *ast.ForIntoExpression:
		s.write(t.Expression)
	case *ast.ForDeclaration:
		names := map[string]bool{}
		declare(names, t.Target)
		s.push(names)
		return true
	}
	return false
}

// write checks an assignment target: every plain name in it must be
// declared by an enclosing scope.
func (s *globalScan) write(target ast.Expression) {
	names, ok := targetNames(target, nil)
	if !ok {
		s.own = true
		return
	}
	for _, name := range names {
		if !s.declared(name) {
			s.own = true
			return
		}
	}
}

func (s *globalScan) declared(name string) bool {
	for i := len(s.scopes) - 1; i >= 0; i-- {
		if s.scopes[i][name] {
			return true
		}
	}
	return false
}

// targetNames appends the plain names an assignment target writes; a
// property (a.b, a[b]) writes none. ok is false for a target it does not
// know.
func targetNames(e ast.Expression, names []string) ([]string, bool) {
	switch t := e.(type) {
	case *ast.Identifier:
		return append(names, t.Name.String()), true
	case *ast.DotExpression, *ast.BracketExpression, *ast.PrivateDotExpression:
		return names, true
	case *ast.AssignExpression: // a default: [a = 1] = list
		return targetNames(t.Left, names)
	case *ast.SpreadElement:
		return targetNames(t.Expression, names)
	case *ast.ArrayPattern:
		for _, el := range t.Elements {
			if el == nil {
				continue // a hole: [, b] = list
			}
			var ok bool
			if names, ok = targetNames(el, names); !ok {
				return nil, false
			}
		}
		if t.Rest == nil {
			return names, true
		}
		return targetNames(t.Rest, names)
	case *ast.ObjectPattern:
		for _, p := range t.Properties {
			var ok bool
			switch p := p.(type) {
			case *ast.PropertyShort:
				names = append(names, p.Name.Name.String())
			case *ast.PropertyKeyed:
				if names, ok = targetNames(p.Value, names); !ok {
					return nil, false
				}
			default:
				return nil, false
			}
		}
		if t.Rest == nil {
			return names, true
		}
		return targetNames(t.Rest, names)
	}
	return nil, false
}

// scopeNames returns the names a scope-opening node declares for the code
// inside it, or nil when n opens no scope (functions and switches are
// walked by descend). A block's scope holds its let, const, class and
// function declarations. A function declared in a block counts for that
// block only, although sloppy code also gives it a var: an assignment to
// it outside the block needs an own global object, which is only slower.
// A static block's holds its var declarations (the parser hoists them
// into DeclarationList, as for functions).
func scopeNames(n any) map[string]bool {
	names := map[string]bool{}
	switch t := n.(type) {
	case *ast.ClassStaticBlock:
		declareVars(names, t.DeclarationList)
	case *ast.ClassLiteral:
		if t.Name != nil {
			names[t.Name.Name.String()] = true
		}
	case *ast.BlockStatement:
		declareLexical(names, t.List)
	case *ast.ForStatement:
		if l, ok := t.Initializer.(*ast.ForLoopInitializerLexicalDecl); ok {
			for _, b := range l.LexicalDeclaration.List {
				declare(names, b.Target)
			}
		}
	case *ast.CatchStatement:
		if t.Parameter != nil {
			declare(names, t.Parameter)
		}
	default:
		return nil
	}
	return names
}

func declareParams(names map[string]bool, p *ast.ParameterList) {
	if p == nil {
		return
	}
	for _, b := range p.List {
		declare(names, b.Target)
	}
	if p.Rest != nil {
		declare(names, p.Rest)
	}
}

func declareVars(names map[string]bool, list []*ast.VariableDeclaration) {
	for _, d := range list {
		for _, b := range d.List {
			declare(names, b.Target)
		}
	}
}

// declareLexical declares the let, const, class and function declarations
// of a statement list.
func declareLexical(names map[string]bool, list []ast.Statement) {
	for _, st := range list {
		switch t := st.(type) {
		case *ast.LexicalDeclaration:
			for _, b := range t.List {
				declare(names, b.Target)
			}
		case *ast.FunctionDeclaration:
			if t.Function != nil && t.Function.Name != nil {
				names[t.Function.Name.Name.String()] = true
			}
		case *ast.ClassDeclaration:
			if t.Class != nil && t.Class.Name != nil {
				names[t.Class.Name.Name.String()] = true
			}
		}
	}
}

// declare adds the names a binding target declares. A target it does not
// know declares nothing, which only makes assignments to it count as
// undeclared.
func declare(names map[string]bool, target ast.Node) {
	list, ok := targetNames(asExpression(target), nil)
	if !ok {
		return
	}
	for _, n := range list {
		names[n] = true
	}
}

func asExpression(n ast.Node) ast.Expression {
	e, _ := n.(ast.Expression)
	return e
}

// isWrappedFunction reports whether prg is one function expression: a
// node script in its wrapper (compileScript).
func isWrappedFunction(prg *ast.Program) bool {
	if len(prg.Body) != 1 {
		return false
	}
	st, ok := prg.Body[0].(*ast.ExpressionStatement)
	if !ok {
		return false
	}
	_, ok = st.Expression.(*ast.FunctionLiteral)
	return ok
}
