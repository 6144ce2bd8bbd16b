package jsscan

// RegexpStarts scans src as Code does (as goja parses it, unwrapped) and
// returns where each regular expression literal starts, as the scan
// decided between a pattern and a division.
func RegexpStarts(src string) ([]int, error) {
	var at []int
	_, err := scan(src, codeBounds(), func(i int) { at = append(at, i) })
	return at, err
}
