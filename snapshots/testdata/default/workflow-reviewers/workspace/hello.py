def greet(name):
    return 'Hello, ' + nam

print(greet('world'))
