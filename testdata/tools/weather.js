// A stand-in for a weather service: tools reach nothing outside the
// sandbox but the host functions the agent is granted.
const table = {Oslo: "cloudy", Rome: "sunny"};
if (!(config.city in table)) {
  signal.error({kind: "not_found", message: "no weather for " + config.city});
}
return {city: config.city, sky: table[config.city]};
