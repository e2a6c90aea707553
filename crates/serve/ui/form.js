/* placeholder: the console's form.js */
