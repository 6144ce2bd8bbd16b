package graph

// builtinNodeTypes are the node types every engine knows, one per line.
func builtinNodeTypes() []NodeType {
	return []NodeType{
		ScriptType(),
		InferenceType(),
		ToolType(),
		DelegateType(),
	}
}

// isBuiltinNodeType reports whether name is a built-in node type.
func isBuiltinNodeType(name string) bool {
	for _, t := range builtinNodeTypes() {
		if t.Name() == name {
			return true
		}
	}
	return false
}
